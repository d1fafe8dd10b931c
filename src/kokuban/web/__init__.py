"""The web face: `create_app()` (FastAPI: the use cases as JSON over HTTP, and the blackboard page) and
`serve()`. Needs the `web` extra (`pip install 'kokuban[web]'`)."""

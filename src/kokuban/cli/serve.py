"""`kokuban serve`: the blackboard page and the HTTP API on this machine (127.0.0.1), offline.

Presentation only: the web face (`kokuban.web`) calls the same use cases as the other commands.
"""

from __future__ import annotations

import click


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="TCP port on 127.0.0.1.")
def serve(port: int) -> None:
    """Serve the blackboard page and the JSON API at http://127.0.0.1:PORT (API schema at /openapi.json)."""
    try:
        from kokuban.web.app import serve as run_server
    except ImportError as exc:
        raise click.ClickException(f"`kokuban serve` needs the web extra ({exc.name} is missing): "
                                   "pip install 'kokuban[web]'") from None
    click.echo(f"kokuban: the blackboard at http://127.0.0.1:{port}/ (API schema at /openapi.json); Ctrl-C stops it",
               err=True)
    run_server(port=port)


commands = [serve]

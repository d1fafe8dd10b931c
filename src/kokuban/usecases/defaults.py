"""The use cases' default values, in a module light enough for the faces' help texts to import."""

#: Batch the automatic accelerator count must hold at the context (a plausible serving batch).
AUTO_GPUS_BATCH = 256
#: Context when a request gives none (and no prompt + output): 4096 tokens, or the model's window if smaller.
DEFAULT_CONTEXT = 4096

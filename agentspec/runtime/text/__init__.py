"""Text and tokens: tokenizers, the built-in tiny model, chat templates, reasoning and model framing."""

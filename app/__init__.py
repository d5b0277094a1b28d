"""Argue: debates between large language models, streamed live and kept."""

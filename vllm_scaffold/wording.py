"""Small pieces of English the tool's messages share."""

from __future__ import annotations


def a(word: str) -> str:
    """`word` with its indefinite article: "an attention-backend", "a scheduler", "an IOProcessor". By the
    first letter: the seam keys and vLLM's class names have no silent or sounded-out first letters."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"

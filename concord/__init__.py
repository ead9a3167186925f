"""Concord: human ratings for text-to-image models, and how metrics agree with them."""

__version__ = "0.1.0"

"""my_io: an IO processor turning structured embedding requests into normalised, truncated embeddings."""

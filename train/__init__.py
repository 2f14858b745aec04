"""specd training package: corpus, tokenizer, models, GGUF export."""

"""Games: batched engines, reference engines, encodings, bots. Knows nothing of CFR."""

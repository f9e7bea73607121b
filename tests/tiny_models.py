"""A tiny randomly initialised BERT cross-encoder, built and saved locally (no hub)."""

from __future__ import annotations

from pathlib import Path

WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "is",
    "in",
    "for",
    "what",
    "when",
    "how",
    "which",
    "proposal",
    "deadline",
    "observing",
    "tool",
    "spectrometer",
    "channels",
    "basebands",
    "cryostat",
    "maintenance",
    "helpdesk",
    "hours",
    "imaging",
    "pipeline",
    "weighting",
    "data",
    "delivery",
    "archive",
    "band",
    "frequency",
    "antenna",
]


def build_tiny_cross_encoder(directory: Path) -> Path:
    """Save config, weights and a word-level vocabulary that ``CrossEncoder`` can load offline."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.2,
    )
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory

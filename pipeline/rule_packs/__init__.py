"""The answer rule packs, one module each, registered in :data:`pipeline.answer_rules.RULE_PACKS`."""

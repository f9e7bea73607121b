"""The answer rule packs, one module (or package) each, registered in
:data:`pipeline.answering.answer_rules.RULE_PACKS`."""

"""Answer composition: what a user reads, made from the model's reply and the evidence.

The reply read sentence by sentence, the checks that keep a sentence (figures, names,
negations, absent names), the quotes under it, and the optional rule packs for one kind of
document. It reads the retrieval room's passages; the retrieval room never imports it.
README.md names each module and its one job.
"""

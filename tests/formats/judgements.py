"""A judge's answer in the blind form (sides numbered by the order shown), shared by the
judge-bias tests of the format, the web app and the command line."""

SIDE_ONE_AHEAD = """SCORES
Logical consistency | Side 1: A — tight | Side 2: B — loose
Specificity of evidence | Side 1: B — few numbers | Side 2: C — anecdotes
Rebuttal strength | Side 1: A — answers cost | Side 2: B — partial
Originality | Side 1: B — familiar | Side 2: A — new angle
Overall | Side 1: A 8/10 | Side 2: B 6/10

SYNTHESIS
Review small changes fast."""

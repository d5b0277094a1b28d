"""``argue eval``: does debating help? Questions with known answers are put to one model
alone, to the same model sampled k times with a vote, and to debates; answers are parsed,
scored and kept, and the accuracy of each condition is reported with its interval.

Modules: ``tasks`` (the questions), ``answers`` (asking for, reading and scoring an answer),
``stats`` (intervals and votes), ``conditions`` (the registry of ways to answer),
``harness`` (the loop that runs a run's items), ``store`` (persistence), ``summary`` (the
table per condition) and ``chart`` (the SVG geometry of that table).
"""

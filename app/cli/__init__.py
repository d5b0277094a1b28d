"""The ``argue`` command line: one module per subcommand, dispatched by ``main``."""

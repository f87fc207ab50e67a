"""Functions and adapters specs can use. Importing this package is cheap: no torch."""

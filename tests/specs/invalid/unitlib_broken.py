"""A user module of deep_user_module_syntax_error.yaml: the colon after the signature is missing."""


def convert(value, unit)
    return value

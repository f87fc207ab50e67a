"""A user module of deep_user_module_no_attribute.yaml: validate reads it, never imports it."""


def convert(value, unit):
    return value * {"km": 1000.0, "m": 1.0}[unit]

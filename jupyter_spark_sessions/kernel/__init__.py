"""The kernel side of Jupyter: the control-channel and comm handlers (``channels``), the
one request handler behind every channel, the marker frontends look for, the shutdown
hook, and the only wrappers of ipykernel's private APIs."""

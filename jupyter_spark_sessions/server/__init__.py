"""The Jupyter server extension: the REST relay to a kernel's control channel, for
local kernels and for kernels behind a Kernel Gateway."""

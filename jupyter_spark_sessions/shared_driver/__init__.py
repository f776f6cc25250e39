"""One Spark Connect server shared by the notebooks of a user (``--remote shared``):
where it is found (``rendezvous``), the process that owns it (``keeper``), and a
kernel's side of it (``membership``)."""

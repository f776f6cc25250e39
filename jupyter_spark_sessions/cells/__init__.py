"""A cell's life: its Spark jobs tagged with its session and execution count, its
progress view under it, the one line it ends with, and what the kernel's Interrupt
cancels (``lifecycle`` runs the steps in order)."""

"""The ``%spark_session`` magics: the line's grammar (``parser``), the commands
(``session_magics``), the ipywidgets panel and the links to Spark's UI."""

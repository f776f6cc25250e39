"""The pure parts of the ``%%spark_sql`` cell, apart from the magic that runs them
(``magics/sql_magic.py``): a cell's text read the way Spark's lexer reads it (split into
statements on ``;`` outside strings, quoted names, comments and ``BEGIN ... END``
scripts; ``{name}`` variables bound as parameters or DataFrames; each statement's kind
and the one line a command ends with) in ``statements.py``; a result as a table a
person can read, in HTML and plain text, in ``result_table.py``; and Spark's SQL errors
in at most four lines (error class, message, the query line with a caret) in
``short_errors.py``. Nothing here starts Spark or displays anything: the magic hands in
text, rows and exceptions, and gets strings back.
"""

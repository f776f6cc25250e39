"""Write docs/configuration.md from the traitlets help of SparkSessionsConfig, so the
reference cannot drift from the code (tests/test_docs.py checks it is current).

Run: ``python scripts/config_reference.py``.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_spark_sessions.config import SparkSessionsConfig

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"

INTRO = """# Configuration reference

Generated from the code by `python scripts/config_reference.py`; do not edit by hand.

Set these in an IPython profile (`~/.ipython/profile_default/ipython_config.py`) before
`%load_ext jupyter_spark_sessions`, for example:

```python
c.SparkSessionsConfig.default_master = "local[4]"
c.SparkSessionsConfig.context_conf = {"spark.driver.memory": "4g"}
```

| setting | type | default | meaning |
|---|---|---|---|
"""


def render() -> str:
    rows = []
    traits = SparkSessionsConfig.class_traits(config=True)
    for name in sorted(traits):
        trait = traits[name]
        default = trait.default_value_repr()
        if name == "session_root":
            default = "(the system temp directory)"
        help_text = " ".join(trait.help.split()).replace("|", "\\|")
        rows.append(f"| `{name}` | {type(trait).__name__} | `{default}` | {help_text} |")
    return INTRO + "\n".join(rows) + "\n"


def main() -> None:
    PAGE.write_text(render())
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()

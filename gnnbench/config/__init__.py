"""The bottom layer: where configs live, how they are composed and named, how every key is
declared (settings.py, groups.py) and checked, and the errors that turn bad input into one
readable line. Imports nothing else of gnnbench."""

from gnnbench.config.compose import (
    CONF_DIR,
    CONFIG_GROUPS,
    check_overrides,
    compose_config,
    group_choices,
    project_dir,
    register_resolvers,
)
from gnnbench.config.errors import (
    ConfigError,
    choice,
    file_name,
    first_line,
    integer,
    number,
    require,
    show,
    suggest,
)
from gnnbench.config.naming import run_name, variant_label, variant_slug
from gnnbench.config.settings import (
    Count,
    Device,
    FileName,
    Flag,
    Identifier,
    Message,
    Real,
    Settings,
    check,
)
from gnnbench.config.validate import resolve_device, validate

__all__ = [
    "CONF_DIR", "CONFIG_GROUPS", "ConfigError", "Count", "Device", "FileName", "Flag",
    "Identifier", "Message", "Real", "Settings", "check", "check_overrides", "choice",
    "compose_config", "file_name", "first_line", "group_choices", "integer", "number",
    "project_dir", "register_resolvers", "require", "resolve_device", "run_name", "show",
    "suggest", "validate", "variant_label", "variant_slug",
]

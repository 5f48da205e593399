"""Names of the enums of the OpenAPI schema whose values come from the simulator's registries
(``SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"]``; imported only to build the schema)."""

from clustersim.presets import preset_names
from clustersim.traces import formats
from scheduling.registry import PLACEMENTS, POLICIES

POLICY_NAMES = list(POLICIES)
PLACEMENT_NAMES = list(PLACEMENTS)
PRESET_NAMES = list(preset_names())
TRACE_FORMATS = list(formats())

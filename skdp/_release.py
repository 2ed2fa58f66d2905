"""Former home of the fit protocol, split by topic (temporary re-exports for the test-suite's imports).

:mod:`skdp._protocol` (charge, release), :mod:`skdp._classes` (label sets), :mod:`skdp._ovr`
(one-vs-rest), :mod:`skdp._predict` (predictions), :mod:`skdp.privacy.search` (the budget search),
:mod:`skdp._warnings`.
"""

from ._classes import *  # noqa: F401,F403
from ._classes import _is_auto  # noqa: F401
from ._ovr import *  # noqa: F401,F403
from ._predict import *  # noqa: F401,F403
from ._protocol import *  # noqa: F401,F403
from ._protocol import _NO_TARGETS  # noqa: F401
from ._warnings import *  # noqa: F401,F403
from ._warnings import caller_stacklevel as _caller_stacklevel  # noqa: F401
from .privacy.search import *  # noqa: F401,F403

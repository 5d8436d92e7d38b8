"""memstrata behind the memory interfaces of agent frameworks, one module per framework
(``memstrata.integrations.langgraph``, ...). Each module imports its framework, which is
an optional extra (``pip install 'memstrata[langgraph]'``); importing ``memstrata`` or
this package loads none of them.

Every adapter takes any of the four clients with the same verbs: :class:`memstrata.Memory`
and :class:`memstrata.AsyncMemory` (in process) or :class:`memstrata.RemoteMemory` and
:class:`memstrata.AsyncRemoteMemory` (the service). See docs/integrations.md.
"""

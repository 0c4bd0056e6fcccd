"""The live view a worker serves while a run waits for a person: the run's page as a stream of
frames, the person's mouse and keyboard forwarded to it, and Continue / Give up buttons.

:mod:`.session` is what the runner hands over (the page, the one-time token check, callbacks);
:mod:`.server` is the aiohttp server in the worker's event loop; :mod:`.page` the HTML it serves.
"""

"""Settings: ``base`` holds everything; ``local`` (default), ``production``, ``test`` adjust it."""

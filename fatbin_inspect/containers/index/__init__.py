"""Packages judged straight from a package index, before anything is installed.

``purl`` and ``requirements`` say which releases are asked for (``pkg:pypi/NAME[@VERSION]``, a
pip requirements file, a PEP 751 ``pylock.toml``); ``config`` finds the index pip would use;
``pages`` reads its Simple API (PEP 691 JSON, else PEP 503 HTML); ``choose`` picks the file pip
would install for a platform; ``remote_zip`` reads only the members of a remote wheel that can
hold device code (HTTP range requests), and ``transport`` is how bytes are fetched.
"""

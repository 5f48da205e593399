"""Store a large blob (an uploaded trace) as an :class:`~planner.models.Artefact` without
holding it in memory.

:meth:`Artefact.build` takes the bytes whole: with the upload read into memory, its gzip copy
and the database driver's escaped copy of that, a 255 MB upload held gunicorn at 862 MB.
:func:`store` reads the upload in chunks, hashing and gzip-compressing each into a spooled
temporary file (memory up to :data:`SPOOL_MEMORY_BYTES`, then disk), creates the row, and
streams the compressed bytes into its ``data`` column: on PostgreSQL by ``COPY ... FROM
STDIN`` (binary) into a temporary table and one ``UPDATE`` from it, on SQLite through
incremental blob I/O. The web process's memory then stays at a few chunks whatever the
upload's size. (Other databases: the compressed bytes are read back whole and saved.)
"""

from __future__ import annotations

import gzip
import hashlib
import struct
import tempfile
from collections.abc import Iterator
from typing import IO, Any

from django.db import connections, router, transaction

from planner.models import Artefact

#: Bytes read, hashed and compressed at a time.
CHUNK_BYTES = 1024 * 1024
#: Compressed bytes kept in memory before the spool moves to a temporary file.
SPOOL_MEMORY_BYTES = 8 * 1024 * 1024

_PGCOPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


def _chunks(source: bytes | IO[bytes] | Any) -> Iterator[bytes]:
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        for i in range(0, len(view), CHUNK_BYTES):
            yield bytes(view[i : i + CHUNK_BYTES])
        return
    if hasattr(source, "chunks"):  # a Django File / UploadedFile
        if hasattr(source, "seek"):
            source.seek(0)
        yield from source.chunks(CHUNK_BYTES)
        return
    while chunk := source.read(CHUNK_BYTES):
        yield chunk


def store(
    owner: Any,
    kind: str,
    source: bytes | IO[bytes] | Any,
    *,
    filename: str = "",
    content_type: str = "application/octet-stream",
) -> Artefact:
    """A saved, gzip-compressed artefact of ``source`` (bytes, a file object or a Django
    ``UploadedFile``), read in chunks of :data:`CHUNK_BYTES`; the same row and bytes
    :meth:`Artefact.build` would make, its :meth:`~Artefact.read` the original bytes."""
    digest = hashlib.sha256()
    size = 0
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES) as spool:
        with gzip.GzipFile(fileobj=spool, mode="wb", compresslevel=6, mtime=0) as packer:
            for chunk in _chunks(source):
                digest.update(chunk)
                size += len(chunk)
                packer.write(chunk)
        stored_size = spool.tell()
        db = router.db_for_write(Artefact)
        with transaction.atomic(using=db):
            artefact = Artefact.objects.using(db).create(
                owner=owner,
                kind=kind,
                filename=filename,
                content_type=content_type,
                encoding="gzip",
                size=size,
                stored_size=stored_size,
                sha256=digest.hexdigest(),
                data=b"",
            )
            spool.seek(0)
            _write_data(db, artefact, spool, stored_size)
    # ``data`` is deferred: the bytes stay in the database until something reads them
    artefact.__dict__.pop("data", None)
    return artefact


def _write_data(db: str, artefact: Artefact, spool: IO[bytes], n: int) -> None:
    """Stream ``n`` bytes from ``spool`` into the saved artefact's ``data``."""
    connection = connections[db]
    table = connection.ops.quote_name(Artefact._meta.db_table)
    column = connection.ops.quote_name(Artefact._meta.get_field("data").column)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
            raw.execute("CREATE TEMPORARY TABLE clustersim_blob (data bytea) ON COMMIT DROP")
            with raw.copy("COPY clustersim_blob (data) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(_PGCOPY_SIGNATURE + struct.pack("!hi", 1, n))
                while chunk := spool.read(CHUNK_BYTES):
                    copy.write(chunk)
                copy.write(struct.pack("!h", -1))
            raw.execute(
                f"UPDATE {table} SET {column} = (SELECT data FROM clustersim_blob) WHERE id = %s",
                [artefact.pk],
            )
            raw.execute("DROP TABLE clustersim_blob")
    elif connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET {column} = zeroblob(%s) WHERE id = %s", [n, artefact.pk]
            )
        name = Artefact._meta.get_field("data").column
        with connection.connection.blobopen(Artefact._meta.db_table, name, artefact.pk) as blob:
            while chunk := spool.read(CHUNK_BYTES):
                blob.write(chunk)
    else:
        Artefact.objects.using(db).filter(pk=artefact.pk).update(data=spool.read())

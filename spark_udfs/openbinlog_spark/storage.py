"""Reading segment files wherever they live: local paths and every fsspec URL.

Local files are read with ``os.pread``; other URLs with fsspec range reads
(``cat_file``), so a chunk is one request. Whole-file compressed segments
(``NNNNNNNN.dat.gz``, ``NNNNNNNN.dat.zst``, spec 2.6) are unpacked by the
reference reader's ``openbinlog.compressed``: a header alone, then, at the first
read beyond it, up to the segment's end and never beyond (R-43): planning's
header check unpacks little more than a header.

Every source counts the bytes it reads (``bytes_read``: fetched from the
store, or unpacked), which the executors log (``openbinlog_spark.reads``).
Sparse index files (spec 18) are opened as ``IndexFile``: a read of one that
fails reads as no bytes, so the index check or the entry check refuses it
and the read goes on without it (R-33, R-47).

A read given no ``fs.*`` option reaches S3 as Spark's own sources do: with
the S3A settings of the Hadoop configuration (``spark.hadoop.fs.s3a.*``:
credentials, endpoint, path style access, region, and the per-bucket
``fs.s3a.bucket.<bucket>.*``), which ``register`` reads on the driver and
the storage options carry, under ``HADOOP_S3``, to the executors.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

import fsspec

from openbinlog._format import SEGMENT_NAME, segment_name
from openbinlog._fs import pread
from openbinlog._segment_file import open_following, segment_names
from openbinlog.compressed import CompressedSegment, UnpackError, unpack_failure
from openbinlog.errors import BinlogIOError, NotALogError

from .conditions import SparkCondition

COMPRESSIONS = {"gz": "gzip", "zst": "zstd"}
_CODECS = {name: suffix for suffix, name in COMPRESSIONS.items()}  # the codec of each compression, by its suffix
CAP_NAME = "option maxDecompressedBytes"
DEFAULT_MAX_DECOMPRESSED = 16 << 30
HEAD_BYTES = 4096  # the first bytes of a remote file, fetched once

# The storage options of a read given no fs.* option: the fs.s3a.* settings of the Hadoop configuration (names
# after "fs.s3a."), for s3:// and s3a:// only (a name no fs.* option can make: options are lower-cased).
HADOOP_S3 = "Hadoop fs.s3a"
S3_PROTOCOLS = ("s3", "s3a")
S3A_PREFIX = "fs.s3a."
ANONYMOUS_PROVIDER = "AnonymousAWSCredentialsProvider"

# A compressed segment that cannot be unpacked, or unpacks beyond maxDecompressedBytes: ``bad_header``, raised by
# the reference reader's unpacking itself (ignoreCorruptFiles skips it).
CorruptFileError = UnpackError


# How long before planning reads a header its file must have last changed for the check to be trusted later (``Stamp``):
# more than the granularity of the coarsest file times (2 s), so that any change after the read gives the file other
# times than its stamp holds. As the JVM source's LogView.SETTLED_MS.
SETTLED_S = 2.0


@dataclass(frozen=True, slots=True)
class Stamp:
    """What the storage tells of a file without reading it, and differs whenever its bytes may.

    ``facts``: on disk, its device, inode, size and modification and change
    times to the nanosecond (the change time moves with every write,
    truncation, link or rename, and no call sets it back); on an object store,
    the ETag its listing gives, with the size (an object is never written in
    place, and one put again under the name has another ETag unless it holds
    the same bytes), or its size and modification time where it gives none.
    ``changed``: when it last changed, in seconds since the epoch; None where
    ``facts`` identify the bytes themselves (an ETag).
    """

    facts: tuple[object, ...]
    changed: float | None

    def settled(self, now: float) -> bool:
        """Unchanged for ``SETTLED_S`` at ``now``, or identified by its bytes: a later change shows in the stamp."""
        return self.changed is None or self.changed <= now - SETTLED_S


def modified_time(info: Mapping[str, Any]) -> float | None:
    """When a file last changed, in seconds since the epoch, as an fsspec listing describes it."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created"):
        value = info.get(key)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def listed_stamp(info: Mapping[str, Any]) -> Stamp | None:
    """The stamp of a remote file as an fsspec listing describes it; None for anything but a file, or a file of
    which it tells too little."""
    if info.get("type") == "directory":
        return None
    size = info.get("size")
    etag = info.get("ETag") or info.get("etag")
    if isinstance(etag, str) and etag:
        return Stamp(("etag", etag, size), None)
    modified = modified_time(info)
    return None if modified is None else Stamp(("modified", size, modified), modified)


class MissingFileError(BinlogIOError):
    """A file that was listed but is gone when it is read."""


class FileNotExistError(MissingFileError, SparkCondition):
    """A file the plan listed that is gone when a task opens it: Spark's ``FAILED_READ_FILE.FILE_NOT_EXIST``
    (SQLSTATE KD001) naming it, as Spark's file sources (``FileScanRDD``) and the JVM source raise it, and an
    ``io_error`` (``conditions``)."""

    CONDITION = "FAILED_READ_FILE.FILE_NOT_EXIST"
    SQLSTATE = "KD001"
    TEXT = (
        "Encountered error while reading file {path}. File does not exist. It is possible the underlying files have"
        " been updated. You can explicitly invalidate the cache in Spark by running 'REFRESH TABLE tableName' command"
        " in SQL or by recreating the Dataset/DataFrame involved."
    )

    def __init__(self, path: str) -> None:
        MissingFileError.__init__(self, "File does not exist", path=path)
        self._as_condition(self.error_class, path=path)


def _file_url(url: str) -> bool:
    return url[:5].lower() == "file:"


def is_local(url: str) -> bool:
    """A plain path, or a ``file:`` URL in any of the forms Spark and Hadoop write (``file:/p``, ``file:///p``)."""
    return "://" not in url or _file_url(url)


def local_path(url: str) -> str:
    """The absolute path a local ``url`` names, as Hadoop reads it: ``/p``, ``file:/p`` and ``file:///p`` alike.

    The rest of a ``file:`` URL is taken literally (no ``%`` decoding, and
    ``?`` stays a glob character), as Hadoop's ``Path`` takes it. A URL that
    names a host, ``localhost`` included, is refused as Hadoop refuses it
    (``Wrong FS``): read as a local path it would read this machine's files.
    """
    path = url
    if _file_url(url):
        path = url[len("file:") :]
        if path.startswith("//"):
            host, _, rest = path[2:].partition("/")
            if host:
                raise NotALogError(
                    f"a file: URL names a file of this machine, not of the host {host!r}:"
                    " write file:/path or file:///path (or mount that host's files here)",
                    path=url,
                )
            path = "/" + rest
    # POSIX keeps a leading "//" that Hadoop collapses: one slash, so that every form names its files alike.
    return "/" + os.path.abspath(path).lstrip("/")


S3A_NAMES = (
    "access.key",
    "secret.key",
    "session.token",
    "aws.credentials.provider",
    "endpoint",
    "connection.ssl.enabled",
    "endpoint.region",
    "path.style.access",
)
SPARK_HADOOP = "spark.hadoop."


def hadoop_s3_settings(entries: Mapping[str, str]) -> dict[str, str]:
    """The S3A settings ``s3_options`` uses, by their names after ``fs.s3a.``, from a Hadoop configuration's
    ``fs.s3a.*`` entries (a session's ``spark.hadoop.fs.s3a.*`` over them, as they are the later word)."""
    found: dict[str, str] = {}
    for key in sorted(entries, key=lambda key: key.startswith(SPARK_HADOOP)):
        name = key.removeprefix(SPARK_HADOOP)
        if not name.startswith(S3A_PREFIX):
            continue
        name = name[len(S3A_PREFIX) :]
        bucket_name = name.split(".", 1)[1] if name.startswith("bucket.") else ""
        if name in S3A_NAMES or any(bucket_name.endswith("." + own) for own in S3A_NAMES):
            found[name] = entries[key]
    return found


def s3_options(settings: Mapping[str, str], bucket: str) -> dict[str, Any]:
    """The s3fs options for ``bucket`` that Hadoop's S3A settings make (names after ``fs.s3a.``).

    As S3A does, ``bucket.<bucket>.<name>`` overrides ``<name>`` for that
    bucket. Credentials (``access.key``, ``secret.key``, ``session.token``),
    ``endpoint`` (``http://`` when ``connection.ssl.enabled`` is false, if it
    names no scheme), ``endpoint.region``, ``path.style.access`` and an
    anonymous ``aws.credentials.provider``; nothing set, nothing passed: s3fs
    then finds credentials as the AWS SDK does.
    """
    own = f"bucket.{bucket}."
    merged = {name: value for name, value in settings.items() if not name.startswith("bucket.")}
    merged.update({name[len(own) :]: value for name, value in settings.items() if name.startswith(own)})
    found = {name: value.strip() for name, value in merged.items() if value is not None and value.strip()}
    options: dict[str, Any] = {}
    for name, option in (("access.key", "key"), ("secret.key", "secret"), ("session.token", "token")):
        if name in found:
            options[option] = found[name]
    if ANONYMOUS_PROVIDER in found.get("aws.credentials.provider", ""):
        options["anon"] = True
    if "endpoint" in found:
        endpoint = found["endpoint"]
        if "://" not in endpoint:
            secure = found.get("connection.ssl.enabled", "true").lower() != "false"
            endpoint = ("https://" if secure else "http://") + endpoint
        options["endpoint_url"] = endpoint
    if "endpoint.region" in found:
        options["client_kwargs"] = {"region_name": found["endpoint.region"]}
    if found.get("path.style.access", "").lower() == "true":
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return options


class Storage:
    """File access with the fsspec options a read was given (credentials, endpoint), or, given none, with the
    S3A settings of the Hadoop configuration for S3 (``HADOOP_S3``)."""

    def __init__(self, storage_options: Mapping[str, Any] | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        self._filesystems: dict[tuple[str, str], fsspec.AbstractFileSystem] = {}

    def filesystem(self, url: str) -> tuple[fsspec.AbstractFileSystem, str]:
        """The fsspec file system for ``url`` and the path it uses for it."""
        if is_local(url):
            return fsspec.filesystem("file"), local_path(url)
        protocol, _, rest = url.partition("://")
        hadoop = self.storage_options.get(HADOOP_S3)
        bucket = rest.split("/", 1)[0] if hadoop is not None and protocol in S3_PROTOCOLS else ""
        fs = self._filesystems.get((protocol, bucket))
        if fs is None:
            if hadoop is None:
                options = self.storage_options
            else:
                options = s3_options(hadoop, bucket) if protocol in S3_PROTOCOLS else {}
            fs = fsspec.filesystem(protocol, **options)
            self._filesystems[(protocol, bucket)] = fs
        return fs, fs._strip_protocol(url)

    def open(
        self,
        url: str,
        compression: str | None,
        *,
        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
        listed_size: int | None = None,
    ) -> SegmentSource:
        """``listed_size``: the size a listing just returned, which spares a remote store one request."""
        if compression is not None:
            return CompressedSource(self, url, compression, max_decompressed)
        if is_local(url):
            return LocalSource(local_path(url))
        return RemoteSource(self, url, listed_size)

    def open_planned(
        self, url: str, compression: str | None, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    ) -> SegmentSource:
        """A segment planning listed, opened when a task reads it: the file planned, or, where compression has
        replaced a plain file since (spec 2.6), its compressed copy, found as the reference reader finds it.
        ``FileNotExistError`` naming the planned file when no name of the segment is left."""
        try:
            return self._open_planned(url, compression, max_decompressed)
        except MissingFileError:
            raise FileNotExistError(url) from None  # the open's own "file not found" would say it twice

    def _open_planned(self, url: str, compression: str | None, max_decompressed: int) -> SegmentSource:
        if compression is not None:
            return self.open(url, compression, max_decompressed=max_decompressed)
        fs = None if is_local(url) else self.filesystem(url)[0]

        def exists(name: str) -> bool:
            # lexists, as the reference: a dangling link is found, and then fails its open as an io_error.
            return os.path.lexists(local_path(name)) if fs is None else bool(fs.exists(fs._strip_protocol(name)))

        def open_file(name: str) -> SegmentSource:
            source = self.open(name, COMPRESSIONS.get(name[len(url) + 1 :]), max_decompressed=max_decompressed)
            if isinstance(source, RemoteSource):
                source.size()  # read lazily: whether the file is there is asked now, not in the middle of the walk
            return source

        return open_following(
            lambda: next((name for name in segment_names(url) if exists(name)), None), url, open_file, MissingFileError
        )

    def segments(self, directory: str) -> dict[int, str]:
        """The segments of ``directory`` now, each by the URL of its plain name (``open_planned`` follows it to a
        compressed copy); none when the directory is gone."""
        try:
            if is_local(directory):
                names = os.listdir(local_path(directory))
            else:
                fs, path = self.filesystem(directory)
                names = [posixpath.basename(name.rstrip("/")) for name in fs.ls(path, detail=False)]
        except FileNotFoundError:
            return {}
        except Exception as exc:
            raise _io_error(exc, directory, "cannot list the log directory") from exc
        logs = {int(match[1]) for name in names if (match := SEGMENT_NAME.match(name))}
        return {log: posixpath.join(directory, segment_name(log)) for log in sorted(logs)}

    def unpack_failure(
        self, url: str, compression: str, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
    ) -> CorruptFileError | None:
        """Why the compressed segment at ``url`` cannot be unpacked to its end as a walk reads it (R-43), or None:
        the whole archive is read and unpacked, and nothing of it kept (``openbinlog.compressed.unpack_failure``)."""
        return unpack_failure(
            _archive(self, url), _CODECS[compression], path=url, max_unpacked=max_decompressed, cap_name=CAP_NAME
        )

    def stamp(self, url: str) -> Stamp | None:
        """The stamp of a local file now (a stat, a symbolic link followed as an open follows it); None where it is
        no regular file, or cannot be looked at (its header is then read, and meets the failure if it lasts)."""
        try:
            found = os.stat(local_path(url))
        except OSError:
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        facts = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        return Stamp(facts, max(found.st_mtime_ns, found.st_ctime_ns) / 1e9)

    def stamps(self, directory: str) -> dict[str, Stamp]:
        """The stamps of the files of a remote ``directory`` now, by URL, from one fresh listing (one request on an
        object store); none where it cannot be listed (their headers are then read)."""
        fs, path = self.filesystem(directory)
        try:
            fs.invalidate_cache(path)
            entries = fs.ls(path, detail=True)
        except Exception:
            return {}
        found = {}
        for info in entries:
            stamp = listed_stamp(info)
            if stamp is not None:
                found[fs.unstrip_protocol(info["name"])] = stamp
        return found

    def open_index(self, url: str, listed_size: int | None = None) -> IndexFile | None:
        """The index file at ``url`` (spec 18), or None when it cannot be opened: an index only saves time."""
        try:
            return IndexFile(LocalSource(local_path(url)) if is_local(url) else RemoteSource(self, url, listed_size))
        except BinlogIOError:
            return None


def _archive(storage: Storage, url: str) -> IO[bytes]:
    """The file of a compressed segment, open for reading."""
    try:
        if is_local(url):
            return open(local_path(url), "rb")
        fs, path = storage.filesystem(url)
        return fs.open(path, "rb")  # type: ignore[no-any-return]
    except Exception as exc:
        raise _io_error(exc, url, "cannot open segment") from exc


def _io_error(exc: BaseException, url: str, what: str) -> BinlogIOError:
    if isinstance(exc, FileNotFoundError) or (isinstance(exc, OSError) and exc.errno == errno.ENOENT):
        return MissingFileError(f"{what}: file not found", path=url)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return BinlogIOError(f"{what}: {reason}", path=url)


class SegmentSource:
    """Read-only random access to the (decompressed) bytes of one segment file."""

    url: str
    bytes_read: int = 0  # what the reads returned (a remote source: what it fetched)

    def read_at(self, offset: int, size: int) -> bytes:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds."""

    def __enter__(self) -> SegmentSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class LocalSource(SegmentSource):
    def __init__(self, path: str) -> None:
        self.url = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise _io_error(exc, path, "cannot open segment") from exc

    def read_at(self, offset: int, size: int) -> bytes:
        try:
            data = pread(self.fd, size, offset)
        except OSError as exc:
            raise BinlogIOError(f"read of {size} bytes failed: {exc.strerror}", path=self.url, offset=offset) from exc
        self.bytes_read += len(data)
        return data

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class RemoteSource(SegmentSource):
    """A file read by ranges, its size as listed: a snapshot, as a planned read is."""

    def __init__(self, storage: Storage, url: str, listed_size: int | None = None) -> None:
        self.url = url
        self.fs, self.path = storage.filesystem(url)
        self._size = listed_size
        self._head: bytes | None = None

    def read_at(self, offset: int, size: int) -> bytes:
        size = min(size, self.size() - offset)
        if size <= 0:
            return b""
        if offset + size <= HEAD_BYTES:
            # Planning reads the first bytes twice (the blank test, then the header): one request for both.
            if self._head is None:
                self._head = self._fetch(0, min(HEAD_BYTES, self.size()))
            return self._head[offset : offset + size]
        return self._fetch(offset, size)

    def _fetch(self, offset: int, size: int) -> bytes:
        try:
            data = bytes(self.fs.cat_file(self.path, start=offset, end=offset + size))
        except Exception as exc:
            raise _io_error(exc, self.url, f"read of {size} bytes at {offset} failed") from exc
        self.bytes_read += len(data)
        return data

    def size(self) -> int:
        if self._size is None:
            try:
                self._size = int(self.fs.size(self.path))
            except Exception as exc:
                raise _io_error(exc, self.url, "cannot stat segment") from exc
        return self._size


class CompressedSource(SegmentSource):
    """A whole-file gzip or zstd segment (spec 2.6), read through ``openbinlog.compressed.CompressedSegment``.

    Bytes are unpacked into an anonymous temporary file as reads need them, never beyond the segment's end its
    header states, and never more than ``max_decompressed`` (option ``maxDecompressedBytes``): a large or hostile
    archive costs disk for what the walk reads, not memory.
    """

    def __init__(self, storage: Storage, url: str, compression: str, max_decompressed: int) -> None:
        self.url = url
        self._segment = CompressedSegment(
            _archive(storage, url), _CODECS[compression], path=url, max_unpacked=max_decompressed, cap_name=CAP_NAME
        )

    def read_at(self, offset: int, size: int) -> bytes:
        data = self._segment.read_at(offset, size)
        self.bytes_read += len(data)
        return data

    def size(self) -> int:
        return self._segment.size()

    def close(self) -> None:
        self._segment.close()


class IndexFile:
    """A sparse index file (spec 18) as the walk's ``IndexSource``: a read that fails reads as no bytes, and a
    size that cannot be had as none, so the walk's checks refuse the index instead of failing the read (R-47)."""

    def __init__(self, source: SegmentSource) -> None:
        self.source = source
        self.url = source.url

    def read_at(self, offset: int, size: int) -> bytes:
        try:
            return self.source.read_at(offset, size)
        except (BinlogIOError, OSError):
            return b""

    def size(self) -> int:
        try:
            return self.source.size()
        except (BinlogIOError, OSError):
            return -1

    def close(self) -> None:
        self.source.close()

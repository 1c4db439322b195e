// Package capture records the kernel files memdoctor reads into one archive
// and replays them later, so every read command can run against a capture
// (--capture FILE) or an unpacked directory (--root DIR) instead of the live
// host.
//
// # Recording
//
// A [Recorder] wraps the fs.FS the collectors read through (os.DirFS("/")
// on the live host) and remembers what they saw:
//
//   - a successful ReadFile, or an Open read to io.EOF, records the bytes;
//     the first successful read of a path wins, later reads are not recorded
//     again, so the archive is one consistent view per file;
//   - a successful ReadDir records the directory and every entry that is a
//     directory (or, outside proc, a symlink to one), so a replay can list
//     cgroup trees and proc/PID directories; regular files that were listed
//     but never read are not recorded;
//   - a successful Stat records a directory, or reads and records a regular
//     file, so an existence check replays;
//   - a failed read, listing or stat records the failure kind (not-exist,
//     permission or other) for that path, unless the path is later read
//     successfully: a success always replaces a failure.
//
// Nothing is recorded for a path the exclude predicate rejects (by default
// ELF binaries and shared libraries such as libc.so.6, see [DefaultExclude]),
// for a file larger than the size limit (4 MiB by default), nor for paths
// below the reserved top-level directory "memdoctor".
//
// # Archive format (version 1)
//
// An archive is a txtar file (golang.org/x/tools/txtar). This is the
// exact output of Write for a small capture:
//
//	memdoctor capture v1                 <- magic, always the first line
//	kernel: 6.8.0-45-generic             <- provenance, "key: value" lines
//	arch: amd64                             (see Provenance for the keys;
//	pagesize: 4096                          unknown keys are kept in Extra)
//	cgroup: v1
//	time: 2025-01-02T03:04:05Z
//	redacted: true
//	-- proc/1/cmdline.qtxt --            <- a file in quoted form (below)
//	>/sbin/init\x00                         (\x00 stands for a NUL byte)
//	-- proc/meminfo --                   <- a file, content verbatim
//	MemTotal:       16314980 kB
//	-- sys/fs/cgroup/memory/empty/ --    <- a directory: name ends in "/"
//	-- memdoctor/errors --               <- recorded failures, if any
//	proc/slabinfo<TAB>permission
//	-- memdoctor/end --                  <- trailer, always the last entry
//
// Entries are sorted by name, then memdoctor/errors (only when there are
// failures) and the memdoctor/end trailer follow. A directory has an entry
// of its own only when no other entry is below it (here
// sys/fs/cgroup/memory is implied). An archive without the trailer is
// reported as truncated. Entries named memdoctor/* other than these two are
// ignored, for later versions. The top-level name "memdoctor" is reserved
// for this metadata and cannot be captured; neither can paths that io/fs
// rejects, longer than 4096 bytes, that start with a blank or that contain
// control characters.
//
// Provenance values that would not survive as raw text (leading or
// trailing blanks, control characters, a leading double quote, invalid
// UTF-8) are written as Go double-quoted strings (strconv.Quote). Blank
// lines and lines starting with "#" in the header are ignored.
//
// File contents are stored verbatim when txtar can hold them exactly: the
// content is empty or ends in a newline, and no line starts with "-- " (such
// a line could be taken for an entry marker). Any other file, and any file
// whose own name ends in ".qtxt" or in a blank (txtar trims marker names),
// is stored quoted under name+".qtxt": the content is split at every "\n"
// and each piece is written as ">" + piece + "\n". Decoding strips the
// final newline, splits at "\n", removes the ">" of every line and joins
// with "\n"; this is exact for every byte string, including ones without a
// trailing newline, with NUL bytes or with CR, and needs no recorded
// length. A stored name ending in ".qtxt" therefore always means "quoted;
// the real name is the stored name without the suffix".
//
// memdoctor/errors holds one line per failure: a path, a TAB and a kind
// ("not-exist", "permission" or "other"). A path ending in "/" is a
// directory whose listing failed. Paths that are not plain text are written
// double-quoted as above.
//
// # Redaction
//
// By default [Write] redacts: the content of every proc/PID/cmdline (and
// proc/PID/task/TID/cmdline) is cut to argv[0], terminated by a NUL as the
// kernel writes it; argv[0] is further cut at the first blank because
// processes that rewrite their title (setproctitle) put their arguments
// there. Arguments carry secrets and are never kept. With redaction off
// cmdline files are written whole. The proc/PID/environ files are never
// written, whether redaction is on or off. proc/cmdline (the kernel's own
// command line) is kept.
//
// [WriteFile] writes an archive atomically (temporary file, then rename),
// readable by its owner only.
//
// # Replay
//
// [Load] and [LoadFile] return a read-only in-memory fs.FS holding the
// exact original bytes, every recorded directory (including empty ones) and
// the recorded failures: reading a path recorded with "permission" returns
// an error matching fs.ErrPermission, "not-exist" matches fs.ErrNotExist
// and "other" matches [ErrCaptureFailed]. A path whose read failed with
// permission or other still exists: it is listed by ReadDir and Stat
// succeeds on it, as on the captured host. Pass the result and
// Provenance.PageSize to procfs.NewFSFrom.
//
// [Unpack] writes an archive's files into a directory for --root DIR, with
// the provenance in DIR/memdoctor/provenance and the failures in
// DIR/memdoctor/errors (same format as in the archive); [OpenDir] replays
// such a directory, failures included, and [ReadProvenanceDir] reads only
// its provenance.
package capture

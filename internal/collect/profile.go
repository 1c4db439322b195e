package collect

import "time"

// Kind is what a collection is for. What each kind reads is decided here
// (Profile), once: check, capture, the recorder and the sources that
// replay saved data start from it and add only what is theirs (the sample
// time, the runtimes' flags, the focus, what a recorder keeps between
// collections).
type Kind int

const (
	// Check is check's reading of a host (the live one, a --root
	// directory or a --capture archive), and of every capture a source
	// replays (so that diagnose --from a capture sees what check does):
	// the top processes and as many cgroups, with the glibc arena
	// estimate; on the live host also the language runtimes, the kernel
	// log, the preload libraries asked for a summary and the allocators
	// named.
	Check Kind = iota
	// Capture is capture's reading of the live host into an archive: as
	// check reads the files, without the runtimes, the kernel log and the
	// questions to processes (an archive holds files only).
	Capture
	// Record is one of the recorder's collections: the top processes and
	// the 10 largest cgroups, with the arena estimate, and the runtimes on
	// the live host.
	Record
	// Cron is a time of a directory of /proc files saved by cron: what
	// those files hold, no processes.
	Cron
)

// askPreloadWait is how long check waits for a preload library's summary.
const askPreloadWait = 2 * time.Second

// CheckSysctls are the files of /proc/sys/vm check reads: those the model
// and the rules read (TestCheckSysctlsAreThoseRead). Reading all 55 or so
// of them, and adding a series of each that nothing read, was some 3 % of
// a check run; the recorder, capture and the sources read every one.
var CheckSysctls = []string{"lowmem_reserve_ratio", "min_free_kbytes", "watermark_scale_factor"}

// Profile is the collection of kind k reading the top processes (0:
// none), on the live host (this host's /proc) or not.
func Profile(k Kind, top int, live bool) Options {
	switch k {
	case Check:
		o := Options{TopProcesses: top, TopCgroups: top, ArenaScan: true, Live: live, Runtimes: live, SysctlVM: CheckSysctls}
		if live {
			o.KmsgPath = "/dev/kmsg"
			o.AskPreload = askPreloadWait
			o.Allocators = true
		}
		return o
	case Capture:
		return Options{TopProcesses: top, TopCgroups: top, ArenaScan: true, Live: live}
	case Record:
		return Options{TopProcesses: top, TopCgroups: 10, ArenaScan: true, Live: live, Runtimes: live}
	}
	return Options{Live: live}
}

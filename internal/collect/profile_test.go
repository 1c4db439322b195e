package collect_test

import (
	"testing"

	"github.com/memdoctor/memdoctor/internal/collect"
)

// A profile for data that is not this host's (--root, --capture, a
// source's replay) never reads this host: no kernel log, no runtimes, no
// questions to processes, no allocators named by their mappings. The
// live profiles of check and the recorder read the runtimes, and only
// check the rest.
func TestProfileNotLiveReadsNothingOfThisHost(t *testing.T) {
	t.Parallel()
	for _, k := range []collect.Kind{collect.Check, collect.Capture, collect.Record, collect.Cron} {
		o := collect.Profile(k, 7, false)
		if o.Live || o.Runtimes || o.DotNetPort || o.KmsgPath != "" || o.AskPreload != 0 || o.Allocators || o.Discover {
			t.Errorf("kind %d, not live: %+v reads this host", k, o)
		}
		if k != collect.Cron && o.TopProcesses != 7 {
			t.Errorf("kind %d: %d processes, want the 7 asked", k, o.TopProcesses)
		}
	}
	chk, rec := collect.Profile(collect.Check, 7, true), collect.Profile(collect.Record, 7, true)
	if !chk.Runtimes || !rec.Runtimes || chk.KmsgPath != "/dev/kmsg" || chk.AskPreload <= 0 || !chk.Allocators {
		t.Errorf("live check %+v, live record %+v: want the runtimes in both, the kernel log, the preload question and the allocators in check", chk, rec)
	}
	if rec.KmsgPath != "" || rec.AskPreload != 0 {
		t.Errorf("live record %+v asks processes or reads the kernel log (its unit forbids both)", rec)
	}
}

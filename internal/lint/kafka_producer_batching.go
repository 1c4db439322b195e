package lint

// kafka_producer_batching: a producer that sends every record on its own.
//
// Mechanism: a Kafka producer appends records to a per-partition batch and
// sends the batch when it reaches its size limit or its linger time runs
// out. The size limit is in BYTES in every client (Java and kafka-python
// batch.size/batch_size, default 16384; librdkafka batch.size, default
// 1000000); only librdkafka's batch.num.messages counts messages (default
// 10000). A batch.size smaller than one record (batch_size=20 meant as
// "20 messages") makes every record its own batch, and with linger.ms 0
// (kafka-python's default in every version, Java's before Kafka 4.0) each
// batch leaves at once: one produce request, one write syscall, one broker
// round trip and one acknowledgement per record. The cost is CPU in system
// time and softirq (more packets, interrupts and context switches), 0.2-2 ms
// per send instead of microseconds, and memory: every in-flight request
// holds its own buffers and the application's send queue backs up. Batches
// of 64 KiB with a linger of a few hundred milliseconds brought one such
// producer's send under 0.1 ms and halved its process memory.
//
// Thresholds: batch.size below the typical record size (--message-bytes,
// 512 B unless told) is a warning; so is a batch.size below 1024 bytes
// whatever the records (it looks like a count of messages or of KiB), and
// librdkafka batch.num.messages of 1. linger.ms 0 alone is informational:
// under load records still pile up while a request is in flight, so
// batching happens anyway; it costs only when records trickle in one at a
// time, which a config file cannot tell (in Python source, .send( calls
// are counted and named as evidence).
//
// Known false positives: a producer that must send each record alone with
// the lowest latency (rare: then acks and idempotence matter more), and
// records that really are a few bytes (say so with --message-bytes).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/memdoctor/memdoctor/internal/model"
)

// RuleKafkaProducerBatching is the rule id.
const RuleKafkaProducerBatching = "kafka_producer_batching"

// DefaultMessageBytes is the record size assumed when none is given.
const DefaultMessageBytes = 512

// canonical maps a setting name to the client-neutral name this rule uses.
func canonical(f Format, key string) (string, bool) {
	switch f {
	case Python:
		switch key {
		case "batch_size":
			return "batch.size", true
		case "linger_ms":
			return "linger.ms", true
		}
		return "", false
	case Librdkafka:
		switch key {
		case "batch.size", "linger.ms", "batch.num.messages":
			return key, true
		case "queue.buffering.max.ms": // librdkafka's older name of linger.ms
			return "linger.ms", true
		}
		return "", false
	}
	switch key {
	case "batch.size", "linger.ms":
		return key, true
	}
	return "", false
}

type setting struct {
	Setting
	value float64
}

func kafkaProducerBatching(f *File, o Options) (model.Finding, bool) {
	got := map[string]setting{}
	for _, s := range f.Settings {
		name, ok := canonical(f.Format, s.Key)
		if !ok || !s.Literal {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s.Value), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		got[name] = setting{s, v} // the last one wins, as in every loader
	}
	batch, hasBatch := got["batch.size"]
	linger, hasLinger := got["linger.ms"]
	count, hasCount := got["batch.num.messages"]

	smallBatch := hasBatch && (batch.value < float64(o.MessageBytes) || batch.value < 1024)
	oneMessage := hasCount && count.value <= 1
	// kafka-python lingers 0 ms unless told; Java and librdkafka files are
	// judged on what they say (their defaults depend on the version).
	lingerZero := hasLinger && linger.value == 0 || !hasLinger && f.Format == Python && (hasBatch || f.Sends > 0)
	if !smallBatch && !oneMessage && !lingerZero {
		return model.Finding{}, false
	}

	key := func(name string) string { return clientKey(f.Format, name) }
	lingerText := "0 (milliseconds)"
	if !hasLinger {
		lingerText = "0 (kafka-python's default)"
	}
	fd := model.Finding{ID: RuleKafkaProducerBatching, Severity: model.Info, Subject: f.Path}
	var why []string
	if smallBatch {
		fd.Severity = model.Warning
		fd.Subject = fmt.Sprintf("%s:%d", f.Path, batch.Line)
		fits := "no"
		if batch.value >= float64(o.MessageBytes) {
			fits = fmt.Sprintf("only %d", int(batch.value)/int(o.MessageBytes))
		}
		why = append(why, fmt.Sprintf("%s=%g is in bytes, not messages: %s %d-byte record fits, so every record becomes a batch of its own", key("batch.size"), batch.value, fits, o.MessageBytes))
		if batch.value < 1024 {
			why = append(why, fmt.Sprintf("a value this small looks like a count of messages or of KiB (%g KiB would be %s=%d)", batch.value, key("batch.size"), int64(batch.value)*1024))
		}
		fd.Evidence = append(fd.Evidence, model.Evidence{Name: "batch_size", Value: batch.value, Unit: "bytes"},
			model.Evidence{Name: "message_size", Value: float64(o.MessageBytes), Unit: "bytes"},
			model.Evidence{Name: "records_per_batch", Value: math.Floor(batch.value / float64(o.MessageBytes)), Unit: "count"})
	}
	if oneMessage {
		fd.Severity = model.Warning
		if !smallBatch {
			fd.Subject = fmt.Sprintf("%s:%d", f.Path, count.Line)
		}
		why = append(why, fmt.Sprintf("batch.num.messages=%g counts messages (librdkafka's only count limit; batch.size is its byte limit): one message per batch", count.value))
		fd.Evidence = append(fd.Evidence, model.Evidence{Name: "batch_num_messages", Value: count.value, Unit: "count"})
	}
	if lingerZero {
		fd.Evidence = append(fd.Evidence, model.Evidence{Name: "linger", Value: 0, Unit: "seconds"})
		if smallBatch || oneMessage {
			why = append(why, fmt.Sprintf("with %s=%s each batch leaves at once", key("linger.ms"), lingerText))
		} else {
			why = append(why, fmt.Sprintf("%s=%s: a batch leaves as soon as the sender is idle, so records sent one at a time each cost a request", key("linger.ms"), lingerText))
			if fd.Subject == f.Path && hasLinger {
				fd.Subject = fmt.Sprintf("%s:%d", f.Path, linger.Line)
			}
		}
	}
	if f.Sends > 0 {
		fd.Evidence = append(fd.Evidence, model.Evidence{Name: "send_calls", Value: float64(f.Sends), Unit: "count"})
	}
	effect := "one produce request, write syscall and broker acknowledgement per record: system and softirq CPU, interrupts and context switches grow with the record rate, a send takes 0.2-2 ms instead of microseconds, and each request in flight holds its own buffers while the send queue backs up (memory)"
	if !smallBatch && !oneMessage {
		effect = "when records trickle in one at a time, one produce request per record: more system/softirq CPU and more buffers in flight; under steady load records still batch while a request is in flight"
	}
	fd.Summary = strings.Join(why, "; ") + ". Effect: " + effect + "."
	fd.Remedies = []model.Remedy{remedy(f, o, got, smallBatch || oneMessage)}
	return fd, true
}

// clientKey spells a neutral setting name as the file's client does.
func clientKey(f Format, name string) string {
	if f == Python {
		return strings.ReplaceAll(name, ".", "_")
	}
	return name
}

// remedy gives the corrected lines: a byte limit that holds many records
// (64 KiB, or 16 records when records are larger; librdkafka's own
// default of 1000000 when its batch.size is set lower), and a linger that
// lets a batch fill (20 ms; 100-500 ms where latency does not matter).
//
// Every line is valid in the file's own syntax, so it can be pasted as it
// is: where it goes (file, line, old value) is a comment line of its own
// above the setting, because neither java.util.Properties nor librdkafka
// knows trailing comments (a "# ..." after a value is part of the value:
// "For input string" when the producer parses it). Python lines are a
// keyword argument (batch_size=65536,) or, when the file sets it in a dict,
// a dict entry ("batch_size": 65536,), with the same trailing comma.
func remedy(f *File, o Options, got map[string]setting, fixBatch bool) model.Remedy {
	want := int64(65536)
	if m := 16 * o.MessageBytes; m > want {
		want = (m + 1023) / 1024 * 1024
	}
	if f.Format == Librdkafka {
		want = max(want, 1000000)
	}
	// Python: settings added are written as the file writes its others.
	dictQuote := ""
	for _, name := range []string{"batch.size", "linger.ms"} {
		if s, ok := got[name]; ok && dictQuote == "" {
			dictQuote = s.DictQuote
		}
	}
	lines := func(name string, v int64) []string {
		k := clientKey(f.Format, name)
		where := "add"
		q := dictQuote
		if s, ok := got[name]; ok {
			k = s.Key // as written (librdkafka's queue.buffering.max.ms stays)
			where = fmt.Sprintf("line %d, was %s", s.Line, shownValue(s.Value))
			q = s.DictQuote
		}
		comment := fmt.Sprintf("# %s: %s", oneLine(f.Path), where)
		if f.Format != Python {
			return []string{comment, fmt.Sprintf("%s=%d", k, v)}
		}
		if q != "" {
			return []string{comment + " (entry of the producer's settings dict)", fmt.Sprintf("%s%s%s: %d,", q, k, q, v)}
		}
		return []string{comment + " (keyword argument of KafkaProducer)", fmt.Sprintf("%s=%d,", k, v)}
	}
	var cmds, undo []string
	if _, ok := got["batch.size"]; ok && fixBatch {
		cmds = append(cmds, lines("batch.size", want)...)
	}
	if s, ok := got["batch.num.messages"]; ok && s.value <= 1 {
		cmds = append(cmds, lines("batch.num.messages", 10000)...)
	}
	cmds = append(cmds, lines("linger.ms", 20)...)
	for _, name := range []string{"batch.size", "batch.num.messages", "linger.ms"} {
		if s, ok := got[name]; ok {
			undo = append(undo, fmt.Sprintf("%s=%s", s.Key, shownValue(s.Value)))
		}
	}
	r := model.Remedy{
		Title:    "Batch by size and by time: set these lines in " + oneLine(f.Path) + ": each replaces the line its comment above it names, or is added where the comment says add (sizes in bytes, linger in milliseconds; 100-500 ms for logs where latency does not matter)",
		Commands: cmds,
		Risk: fmt.Sprintf("each record may wait up to the linger time before it is sent; each partition being written holds an open batch of up to %d bytes "+
			"(Java: bounded by buffer.memory, 32 MiB by default; librdkafka: queue.buffering.max.kbytes). Measure latency before and after.", want),
	}
	if len(undo) > 0 {
		r.Undo = "restore " + strings.Join(undo, ", ")
	} else {
		r.Undo = "remove the added lines"
	}
	return r
}

// shownValue is a value as a comment can hold it: trimmed, and quoted when
// it holds a control character (a "\n" escape would end the comment line).
func shownValue(v string) string {
	v = strings.TrimSpace(v)
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return strconv.Quote(v)
	}
	return v
}

// oneLine keeps a path on one line (a comment ends at a line break).
func oneLine(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// Package decode turns input lines into skew.KeySample and skew.Metric
// events: streaming, allocation-free decoders for the four record shapes
// skewlens reads, one record per line.
//
//   - key sample, JSON: {"ts":..,"job_id":..,"task_name":..,"key":..,...}
//   - Flink metric, JSON (community Kafka metric reporters):
//     {"name":..,"time_stamp":..,"value":.., variables top-level or in "tags"}
//   - Flink metric, InfluxDB line protocol (Flink's InfluxdbReporter)
//   - Flink metric, Prometheus text exposition (Flink's PrometheusReporter)
//
// Blank lines and lines whose first non-blank byte is '#' (including
// Prometheus # HELP / # TYPE) are skipped, except the scrape-time
// directive below. The format is detected per line (FormatAuto) or
// forced (ParseFormat, for a --format flag). Metrics
// skewlens does not use are ignored (KindNone, no error); a line that is
// rejected returns an *Error whose Reason (a stable snake_case name) can
// be counted with Counts. LineReader splits a stream into lines with a
// fixed buffer and skips over-long lines.
//
// # Scrape time
//
// A raw PrometheusReporter scrape has no timestamps. A file of scrapes
// carries each scrape's time in the comment line
// "# skewlens-scrape-time <epoch ms>" (ScrapeTimeDirective), exactly so
// spelled, before the scrape's samples. Decode then sets
// Decoder.DefaultTS to it, so the metric lines that follow without a
// timestamp take it (a timestamp on the line still wins), until the next
// directive or until the caller sets DefaultTS again: `analyze` keeps one
// Decoder per input file, so the time holds for the rest of the file;
// `run` sets the Kafka record time before each message, which a directive
// in the message overrides for the rest of that message. A directive
// whose time is not a positive integer is a bad_timestamp and clears
// DefaultTS, so that the scrape's samples are rejected (missing_timestamp)
// rather than given another time. Without a timestamp, a directive or a
// DefaultTS, a metric line is a missing_timestamp.
//
// # Speed
//
// Everything here is hand-written hot-path code: encoding/json and
// friends are several times (for key samples more than ten times) too
// slow for the targets (>= 2M key samples/s including the sketch update
// downstream, >= 1M metric lines/s); see the benchmarks. Decoding a well-formed
// line does not allocate once the Decoder's scratch buffer has grown to
// the largest escaped line seen; bad lines allocate only their *Error.
// Memory use is bounded by the longest line. The Influx path looks at
// eight bytes a step for the bytes that end a token, finds the field set
// of the lines it ignores (most of a fleet's) with bytes.IndexByte, and
// checks the tag keys it expects from the line before instead of
// scanning them; BenchmarkFlinkInflux measures it on recorded Flink
// output against `wc -l`, and against the byte-at-a-time code it replaced,
// which TestInfluxSameAsBase and FuzzInfluxSameAsBase hold it to. An
// Influx tag set or Prometheus label set that repeats the line before
// byte for byte (a reporter writes a subtask's metrics together) is not
// parsed again: one bytes.Equal, then the variables are sliced out at the
// offsets recorded the first time (tagCache); TestDecodeAfterOtherLines
// and FuzzDecodeAfter hold a Decoder that has seen other lines to a fresh
// one.
//
// # Lifetime of decoded strings
//
// Strings in Decoder.Sample and Decoder.Metric are not copies: they alias
// the line passed to Decode (zero-copy via unsafe.String) or, for values
// that had escapes, the Decoder's scratch buffer. They are valid only
// until the next Decode call on the same Decoder and only while the line's
// bytes are unchanged; with LineReader that is until the next Next call.
// A consumer that keeps a string longer must copy it (strings.Clone), as
// the skew engine does.
//
// # Concurrency
//
// A Decoder is not safe for concurrent use: create one per goroutine
// (NewDecoder is cheap). The same holds for LineReader and Counts. *Error
// values are immutable once returned and may be shared freely.
//
// # Validation summary
//
// JSON must be one RFC 8259 object per line (nesting <= MaxJSONDepth,
// nothing after it). Strings are unescaped (\u escapes, surrogate pairs
// combined, a lone surrogate becomes U+FFFD as in encoding/json); invalid
// UTF-8 is passed through unchanged. Unknown fields of any type are
// skipped; for duplicate fields the last one wins; null counts as absent.
// Integer fields accept any integral JSON number (1e3, 5.0). Key samples
// need ts, job_id, task_name and key; task_id (Flink's task_id, which
// joins the samples to the task's metrics) is optional and must be a
// string (empty or null is absent); weight must be finite and > 0,
// sample_rate in (0, 1], parallelism in [1, 32768], max_parallelism in
// [0, 32768] (0 = Flink's default), parallelism <= max_parallelism,
// subtask_index in [0, parallelism). Metric variables (host, job_id,
// task_name, subtask_index, ...) are strings or numbers, top-level or in
// "tags", optionally spelled "<host>"; a top-level value wins over "tags".
// Task-scoped metrics need job_id, task_name and subtask_index; job-scoped
// ones only job_id. Names are passed on as written: PrometheusReporter's
// filtered spellings ("KeyedProcess____enrich") are matched to the
// originals by the engine, not here. Timestamps
// must be non-negative epoch milliseconds (InfluxDB: s, ms, µs or ns,
// told apart by magnitude; a key sample's ts: s, ms, µs or ns from 1e9
// on, told apart by magnitude, smaller values are milliseconds); a metric
// without one gets Decoder.DefaultTS when that is > 0. Metric values must
// be finite, but for Flink's "no value yet" readings (-1 for the last
// checkpoint's duration and size, NaN for an unmeasured busy time), which
// decode with skew.Metric.NoValue: the table is in sentinel.go.
package decode

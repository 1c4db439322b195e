#!/bin/sh
# Applies the renames of "one home for each thing" (issue 14) to Go files
# written before them (a branch's new rule, source or test files):
#   - the JSON schema moved from internal/diagnose to internal/model;
#   - diagnose.Check/CheckWindow/CheckRecording/CheckInterval became
#     diagnose.Run(diagnose.Data{...});
#   - internal/human became internal/render (with diagnose's FormatValue,
#     Number, Seconds), internal/report internal/render/text,
#     internal/htmlreport internal/render/html;
#   - sample.Scrape became sample.Snapshot (LatestScrape LatestSnapshot).
# Then: go vet ./... and, for the renamed fields (collect.Result.Snapshot,
# store.Batch.Snapshots, source.IngestStats.Snapshots), loop
#   go vet ./... 2>&1 | python3 scripts/fix-renamed-fields.py
# until clean.
#
# usage: scripts/rewrite-issue14.sh FILE.go...
set -eu
cd "$(dirname "$0")/.."
M=github.com/memdoctor/memdoctor/internal
MODEL=CgroupDetail,SchemaVersion,Report,Cost,ShellQuote,Severity,Info,Warning,Critical,Evidence,Remedy,Finding,Coverage,RuleSkip,SkipNeedsRange,SkipMissingData,SkipTooLittle,SkipInvalidData,MergeCoverage,SortFindings,Host,UserTotal,HostInfo,Process,MallocState,Reclaim,Accounting,Category,UnexplainedSource,Cgroups,CgroupUse,CgroupOwner,SlabReport,SlabCache,ZoneReport,Marks,WhatIf,Watermarks,WhatIfHost,WatermarkCalc,Runtime,GCRates
RE=$(echo "$MODEL" | tr , '|')
for f in "$@"; do
  if grep -q '^package diagnose$' "$f"; then
    # Inside package diagnose: uses of the moved names, unqualified.
    go run scripts/qualify.go -pkg model -path "$M/model" -names "$MODEL" "$f"
    go run scripts/qualify.go -pkg render -path "$M/render" -names FormatValue,Number,Seconds "$f"
    perl -pi -e 's/\.hasGC\(\)/.HasGC()/g; s/\br\.url\(\)/r.URL()/g; s/\bhumanSeconds\(/render.ClockSeconds(/g' "$f"
  fi
  python3 scripts/migrate-check-calls.py "$f"
  perl -pi -e "s/(?<![.\\w])diagnose\\.($RE)\\b/model.\$1/g" "$f"
  perl -pi -e 's/(?<![.\w])diagnose\.(FormatValue|Number|Seconds)\b/render.$1/g' "$f"
  sed -i "s#\"$M/human\"#\"$M/render\"#; s#\"$M/report\"#\"$M/render/text\"#; s#\"$M/htmlreport\"#\"$M/render/html\"#" "$f"
  perl -pi -e 's/(?<![.\w])human\.(?=[A-Z])/render./g; s/(?<![.\w])report\.(?=[A-Z])/text./g; s/(?<![.\w])htmlreport\.(?=[A-Z])/html./g; s/\btext\.TextOptions\b/text.Options/g' "$f"
  perl -pi -e 's/\bsample\.Scrape\b/sample.Snapshot/g; s/\bLatestScrape\b/LatestSnapshot/g' "$f"
  perl -pi -e 's/\bbaseScrape\b/baseSnapshot/g' "$f"
  go run scripts/renid.go scrapes=snapshots "$f"
done
"${GOIMPORTS:-goimports}" -w "$@"

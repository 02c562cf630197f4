// The chart of `switchyard sweep --plot`: prompt and generation speed against the tokens in
// the cache, one line per run (several runs or result files overlaid, with a legend), drawn
// with cairo as SVG or PNG (by the file's extension).
#pragma once

#include <string>
#include <vector>

namespace sy::tools {

struct SweepSeries {
    std::string label;
    struct Point {
        double n_kv = 0, speed_pp = 0, speed_tg = 0;
    };
    std::vector<Point> points;
};

// Reads sweep jsonl (switchyard's or llama-sweep-bench's: n_kv, speed_pp, speed_tg per line);
// lines are grouped by their "label" field, else labelled with the file's name. Throws
// sy::Error naming the file and line that is not such an object.
std::vector<SweepSeries> read_sweep_jsonl(const std::string& path);

// Throws sy::Error unless `path` ends in .svg or .png and its folder exists and is writable.
void check_plot_path(const std::string& path);

// Writes the chart to `path` (.svg or .png; written to a temporary file and renamed, so a
// failure leaves no partial chart). Throws sy::Error for another extension, no points, or a
// file that cannot be written.
void plot_sweep(const std::string& path, const std::vector<SweepSeries>& series,
                const std::string& title);

}  // namespace sy::tools

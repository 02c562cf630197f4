#include "commands/sweep_plot.hpp"

#include <cairo-svg.h>
#include <cairo.h>
#include <fmt/format.h>
#include <fontconfig/fontconfig.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "switchyard/core/error.hpp"

namespace sy::tools {
namespace {

constexpr double kWidth = 1280, kHeight = 600;
// Tableau's ten colours: distinct, readable on white.
constexpr double kColors[][3] = {{0.12, 0.47, 0.71}, {1.00, 0.50, 0.05}, {0.17, 0.63, 0.17},
                                 {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
                                 {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50}, {0.74, 0.74, 0.13},
                                 {0.09, 0.75, 0.81}};

// A tick step of 1, 2 or 5 x 10^k giving about `ticks` intervals up to `max`.
double tick_step(double max, int ticks) {
    const double raw = max / ticks;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * mag) return m * mag;
    return 10 * mag;
}

// Thousands as "2.5k" when the step is a thousand or more, so that one axis reads one way.
std::string tick_text(double v, double step) {
    if (step >= 1000) return fmt::format("{:g}k", v / 1000);
    return fmt::format("{:g}", v);
}

void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x,
             double align_y) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s.c_str(), &e);
    cairo_move_to(cr, x - e.width * align_x - e.x_bearing, y - e.height * align_y - e.y_bearing);
    cairo_show_text(cr, s.c_str());
}

struct Panel {
    double x0, y0, w, h;  // the plot area
    double x_max, y_max, x_step, y_step;
    double px(double v) const { return x0 + w * v / x_max; }
    double py(double v) const { return y0 + h - h * v / y_max; }
};

void draw_panel(cairo_t* cr, const Panel& p, const std::string& y_label,
                const std::vector<SweepSeries>& series, bool pp) {
    cairo_set_line_width(cr, 1);
    cairo_set_font_size(cr, 13);
    for (double y = 0; y <= p.y_max + 1e-9; y += p.y_step) {
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, p.x0, std::round(p.py(y)) + 0.5);
        cairo_line_to(cr, p.x0 + p.w, std::round(p.py(y)) + 0.5);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        text_at(cr, tick_text(y, p.y_step), p.x0 - 8, p.py(y), 1, 0.5);
    }
    for (double x = 0; x <= p.x_max + 1e-9; x += p.x_step) {
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, std::round(p.px(x)) + 0.5, p.y0);
        cairo_line_to(cr, std::round(p.px(x)) + 0.5, p.y0 + p.h);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        text_at(cr, tick_text(x, p.x_step), p.px(x), p.y0 + p.h + 8, 0.5, 0);
    }
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    cairo_rectangle(cr, p.x0 + 0.5, p.y0 + 0.5, p.w, p.h);
    cairo_stroke(cr);
    cairo_set_font_size(cr, 14);
    text_at(cr, "N_KV (tokens in the cache)", p.x0 + p.w / 2, p.y0 + p.h + 34, 0.5, 0);
    cairo_save(cr);
    cairo_translate(cr, p.x0 - 58, p.y0 + p.h / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, y_label, 0, 0, 0.5, 0.5);
    cairo_restore(cr);

    cairo_save(cr);
    cairo_rectangle(cr, p.x0 - 5, p.y0 - 5, p.w + 10, p.h + 10);  // whole markers at the edges
    cairo_clip(cr);
    for (size_t s = 0; s < series.size(); ++s) {
        const double* c = kColors[s % std::size(kColors)];
        cairo_set_source_rgb(cr, c[0], c[1], c[2]);
        cairo_set_line_width(cr, 2.2);
        bool first = true;
        for (const SweepSeries::Point& pt : series[s].points) {
            const double v = pp ? pt.speed_pp : pt.speed_tg;
            if (first)
                cairo_move_to(cr, p.px(pt.n_kv), p.py(v));
            else
                cairo_line_to(cr, p.px(pt.n_kv), p.py(v));
            first = false;
        }
        cairo_stroke(cr);
        for (const SweepSeries::Point& pt : series[s].points) {
            cairo_arc(cr, p.px(pt.n_kv), p.py(pp ? pt.speed_pp : pt.speed_tg), 3.5, 0, 2 * M_PI);
            cairo_fill(cr);
        }
    }
    cairo_restore(cr);
}

void draw(cairo_t* cr, const std::vector<SweepSeries>& series, const std::string& title) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    double x_max = 0, pp_max = 0, tg_max = 0;
    for (const SweepSeries& s : series)
        for (const SweepSeries::Point& p : s.points) {
            x_max = std::max(x_max, p.n_kv);
            pp_max = std::max(pp_max, p.speed_pp);
            tg_max = std::max(tg_max, p.speed_tg);
        }
    const auto axis = [](double max, int ticks) {
        const double step = tick_step(max > 0 ? max : 1, ticks);
        return std::pair{std::ceil((max > 0 ? max : 1) * 1.05 / step) * step, step};
    };
    const auto [xm, xs] = axis(x_max, 8);
    const auto [pm, ps] = axis(pp_max, 6);
    const auto [tm, ts] = axis(tg_max, 6);
    // Legend rows under the panels: as many entries per row as fit.
    cairo_set_font_size(cr, 13);
    std::vector<double> entry_width;
    for (const SweepSeries& s : series) {
        cairo_text_extents_t e;
        cairo_text_extents(cr, s.label.c_str(), &e);
        entry_width.push_back(e.x_advance + 50);
    }
    std::vector<std::vector<size_t>> rows(1);
    double row_width = 0;
    for (size_t s = 0; s < series.size(); ++s) {
        if (row_width + entry_width[s] > kWidth - 80 && !rows.back().empty()) {
            rows.emplace_back();
            row_width = 0;
        }
        rows.back().push_back(s);
        row_width += entry_width[s];
    }
    const double legend_h = 22.0 * double(rows.size()) + 10;
    const double top = 56, bottom = 62 + legend_h, gap = 110, left = 84;
    const double panel_w = (kWidth - left - gap - 30) / 2, panel_h = kHeight - top - bottom;
    const Panel pp{left, top, panel_w, panel_h, xm, pm, xs, ps};
    const Panel tg{left + panel_w + gap, top, panel_w, panel_h, xm, tm, xs, ts};

    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, 18);
    text_at(cr, title, kWidth / 2, 16, 0.5, 0);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    draw_panel(cr, pp, "prompt processing (t/s)", series, true);
    draw_panel(cr, tg, "generation (t/s)", series, false);

    cairo_set_font_size(cr, 13);
    double y = kHeight - legend_h + 4;
    for (const auto& row : rows) {
        double width = 0;
        for (size_t s : row) width += entry_width[s];
        double x = (kWidth - width) / 2;
        for (size_t s : row) {
            const double* c = kColors[s % std::size(kColors)];
            cairo_set_source_rgb(cr, c[0], c[1], c[2]);
            cairo_set_line_width(cr, 2.2);
            cairo_move_to(cr, x, y + 7);
            cairo_line_to(cr, x + 30, y + 7);
            cairo_stroke(cr);
            cairo_arc(cr, x + 15, y + 7, 3.5, 0, 2 * M_PI);
            cairo_fill(cr);
            cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
            text_at(cr, series[s].label, x + 38, y + 7, 0, 0.5);
            x += entry_width[s];
        }
        y += 22;
    }
}

}  // namespace

std::vector<SweepSeries> read_sweep_jsonl(const std::string& path) {
    constexpr uintmax_t kMaxBytes = uintmax_t(64) << 20;  // a sweep's results are kilobytes
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw Error("--from " + path + ": not a readable file");
    if (std::filesystem::file_size(path, ec) > kMaxBytes)
        throw Error("--from " + path + ": larger than 64 MiB, not sweep results");
    std::ifstream in(path);
    if (!in) throw Error("--from " + path + ": cannot open the file");
    std::vector<SweepSeries> out;
    std::map<std::string, size_t> index;
    const std::string stem = std::filesystem::path(path).stem().string();
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        const auto number = [&](const char* key) {
            if (!j.is_object() || !j.contains(key) || !j[key].is_number())
                throw Error(
                    fmt::format("{}:{}: not a sweep result (no number '{}')", path, n, key));
            const double v = j[key].get<double>();
            if (!std::isfinite(v) || v < 0 || v > 1e12)
                throw Error(
                    fmt::format("{}:{}: '{}' is {}, not a token count or speed", path, n, key, v));
            return v;
        };
        SweepSeries::Point p{number("n_kv"), number("speed_pp"), number("speed_tg")};
        const std::string label =
            j.contains("label") && j["label"].is_string() ? j["label"].get<std::string>() : stem;
        auto [it, added] = index.try_emplace(label, out.size());
        if (added) out.push_back({label, {}});
        out[it->second].points.push_back(p);
    }
    if (out.empty()) throw Error("--from " + path + ": no sweep results in the file");
    return out;
}

void check_plot_path(const std::string& path) {
    const std::filesystem::path p(path);
    if (p.extension() != ".svg" && p.extension() != ".png")
        throw Error("--plot " + path + ": the file name must end in .svg or .png");
    const std::filesystem::path dir = p.parent_path().empty() ? "." : p.parent_path();
    if (!std::filesystem::is_directory(dir) || access(dir.c_str(), W_OK) != 0)
        throw Error("--plot " + path + ": cannot write the chart (no writable folder " +
                    dir.string() + ")");
}

void plot_sweep(const std::string& path, const std::vector<SweepSeries>& series,
                const std::string& title) {
    check_plot_path(path);
    const std::string ext = std::filesystem::path(path).extension().string();
    bool any = false;
    for (const SweepSeries& s : series) any = any || !s.points.empty();
    if (!any) throw Error("--plot " + path + ": nothing to plot");
    const std::string tmp = path + ".tmp";
    cairo_surface_t* surface =
        ext == ".svg" ? cairo_svg_surface_create(tmp.c_str(), kWidth, kHeight)
                      : cairo_image_surface_create(CAIRO_FORMAT_RGB24, int(kWidth), int(kHeight));
    cairo_t* cr = cairo_create(surface);
    draw(cr, series, title);
    cairo_status_t status = cairo_status(cr);  // e.g. a label that is not UTF-8
    cairo_destroy(cr);
    if (status == CAIRO_STATUS_SUCCESS && ext == ".png")
        status = cairo_surface_write_to_png(surface, tmp.c_str());
    cairo_surface_finish(surface);
    if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    // No cairo object is left: give back the font caches cairo and fontconfig keep for the
    // process's life (the leak checker of the sanitizer suite reports them otherwise).
    cairo_debug_reset_static_data();
    FcFini();
    std::error_code ec;
    if (status != CAIRO_STATUS_SUCCESS) {
        std::filesystem::remove(tmp, ec);
        throw Error("--plot " + path + ": cannot write the chart (" +
                    cairo_status_to_string(status) + ")");
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw Error("--plot " + path + ": cannot write the chart (" + ec.message() + ")");
    }
}

}  // namespace sy::tools

// Progress of a long command on stderr: a redrawn bar with the time left on a terminal, a line
// every 10% otherwise (so logs stay short).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sy::tools {

class ProgressLine {
  public:
    explicit ProgressLine(std::string label)
        : label_(std::move(label)), tty_(isatty(2) != 0), start_(Clock::now()) {}

    // `done` of `total` units; `what` names the current item. The time left assumes the units
    // still to do take as long as the ones done.
    void update(uint64_t done, uint64_t total, const std::string& what) {
        const int percent = total ? static_cast<int>(done * 100 / total) : 100;
        const std::string eta = eta_text(done, total);
        if (tty_) {
            constexpr int kWidth = 30;
            const int filled = percent * kWidth / 100;
            std::fprintf(stderr, "\r%s [%s%s] %3d%% %-10s %-40.40s", label_.c_str(),
                         std::string(static_cast<size_t>(filled), '#').c_str(),
                         std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), percent,
                         eta.c_str(), what.c_str());
            std::fflush(stderr);
        } else if (percent / 10 > last_decile_) {
            last_decile_ = percent / 10;
            std::fprintf(stderr, "%s: %d%% (%s)%s%s\n", label_.c_str(), percent, what.c_str(),
                         eta.empty() ? "" : ", ", eta.c_str());
        }
    }

    // Before a line goes to stdout: on a terminal the bar is erased (the next update redraws
    // it), so that results and the bar do not share a line.
    void clear() {
        if (tty_) std::fputs("\r\033[K", stderr);
    }

    void finish() {
        if (tty_) {
            std::fprintf(stderr, "\r%s [%s] 100%%%-52s\n", label_.c_str(),
                         std::string(30, '#').c_str(), "");
        } else if (last_decile_ < 10) {
            std::fprintf(stderr, "%s: 100%%\n", label_.c_str());
        }
    }

  private:
    using Clock = std::chrono::steady_clock;

    std::string eta_text(uint64_t done, uint64_t total) const {
        if (done == 0 || done >= total) return "";
        const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
        const auto left = static_cast<long long>(elapsed * double(total - done) / double(done));
        if (left >= 3600)
            return "ETA " + std::to_string(left / 3600) + "h" + two(left / 60 % 60) + "m";
        if (left >= 60) return "ETA " + std::to_string(left / 60) + "m" + two(left % 60) + "s";
        return "ETA " + std::to_string(left) + "s";
    }
    static std::string two(long long v) { return (v < 10 ? "0" : "") + std::to_string(v); }

    std::string label_;
    bool tty_;
    int last_decile_ = -1;
    Clock::time_point start_;
};

}  // namespace sy::tools

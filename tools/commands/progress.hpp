// Progress of a long command on stderr: a redrawn bar on a terminal, a line every 10% otherwise
// (so logs stay short).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace sy::tools {

class ProgressLine {
  public:
    explicit ProgressLine(std::string label) : label_(std::move(label)), tty_(isatty(2) != 0) {}

    // `done` of `total` units; `what` names the current item.
    void update(uint64_t done, uint64_t total, const std::string& what) {
        const int percent = total ? static_cast<int>(done * 100 / total) : 100;
        if (tty_) {
            constexpr int kWidth = 30;
            const int filled = percent * kWidth / 100;
            std::fprintf(stderr, "\r%s [%s%s] %3d%% %-48.48s", label_.c_str(),
                         std::string(static_cast<size_t>(filled), '#').c_str(),
                         std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), percent,
                         what.c_str());
            std::fflush(stderr);
        } else if (percent / 10 > last_decile_) {
            last_decile_ = percent / 10;
            std::fprintf(stderr, "%s: %d%% (%s)\n", label_.c_str(), percent, what.c_str());
        }
    }

    void finish() {
        if (tty_) {
            std::fprintf(stderr, "\r%s [%s] 100%%%-50s\n", label_.c_str(),
                         std::string(30, '#').c_str(), "");
        } else {
            std::fprintf(stderr, "%s: 100%%\n", label_.c_str());
        }
    }

  private:
    std::string label_;
    bool tty_;
    int last_decile_ = -1;
};

}  // namespace sy::tools

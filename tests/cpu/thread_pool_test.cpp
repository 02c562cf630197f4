// The CPU plugin's thread pool (plugins/cpu/thread_pool.cpp), compiled in directly: every task of
// every job runs exactly once, on pools of 1 to 4 threads, with jobs back to back (workers
// spinning), after idle spells longer than the spin (workers asleep, joining late or not at all),
// and with tasks that throw.
#include "thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace sy::cpu {
namespace {

// Runs a job of n tasks that each bump their own counter; true when every counter is 1.
bool every_task_once(ThreadPool& pool, int64_t n, std::chrono::microseconds task_time = {}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t task) {
        if (task_time.count() > 0) std::this_thread::sleep_for(task_time);
        runs[static_cast<size_t>(task)].fetch_add(1);
    });
    for (const auto& r : runs)
        if (r.load() != 1) return false;
    return true;
}

TEST(ThreadPool, BackToBackJobsRunEveryTaskOnce) {
    for (int threads = 1; threads <= 4; ++threads) {
        ThreadPool pool(threads);
        EXPECT_EQ(pool.size(), threads);
        for (int64_t n = 1; n <= 67; ++n)
            for (int rep = 0; rep < 20; ++rep)
                ASSERT_TRUE(every_task_once(pool, n)) << threads << " threads, " << n << " tasks";
        ASSERT_TRUE(every_task_once(pool, 100000)) << threads << " threads";
    }
}

// Idle spells longer than ThreadPool::kSpin put the workers to sleep; the next job may finish
// before they wake, or they join it late. Either way each task runs once and the job's results
// are all there when parallel_for returns.
TEST(ThreadPool, JobsAfterIdleSpellsRunEveryTaskOnce) {
    std::mt19937 rng(7);
    for (int threads : {2, 3}) {
        ThreadPool pool(threads);
        std::set<std::thread::id> runners;
        for (int job = 0; job < 60; ++job) {
            if (job % 3 == 0) std::this_thread::sleep_for(ThreadPool::kSpin * 2);
            const int64_t n = 1 + int64_t(rng() % 16);
            const std::chrono::microseconds task_time(job % 2 == 0 ? 0 : 200);
            std::vector<int> results(static_cast<size_t>(n), 0);
            std::mutex m;
            pool.parallel_for(n, [&](int64_t task) {
                if (task_time.count() > 0) std::this_thread::sleep_for(task_time);
                results[static_cast<size_t>(task)] = int(task) + 1;  // plain writes: one per task
                std::lock_guard lock(m);
                runners.insert(std::this_thread::get_id());
            });
            for (int64_t t = 0; t < n; ++t)
                ASSERT_EQ(results[static_cast<size_t>(t)], t + 1)
                    << "job " << job << ", task " << t;
            ASSERT_TRUE(every_task_once(pool, n)) << "job " << job;
        }
        // Tasks of 200 us after 2 ms of sleep: the workers did take part in some jobs.
        EXPECT_GT(runners.size(), 1u) << threads << " threads";
    }
}

TEST(ThreadPool, RangesCoverEveryItemOnce) {
    ThreadPool pool(3);
    for (int64_t items : {1, 2, 5, 64, 1000, 12345})
        for (int64_t min_items : {1, 7, 4096}) {
            std::vector<std::atomic<int>> seen(static_cast<size_t>(items));
            pool.parallel_ranges(items, min_items, [&](int64_t begin, int64_t end) {
                ASSERT_LT(begin, end);
                for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
            });
            for (int64_t i = 0; i < items; ++i)
                ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << items << " items, item " << i;
        }
}

TEST(ThreadPool, ATaskThatThrowsIsReportedAndThePoolGoesOn) {
    for (int threads : {1, 2, 4}) {
        ThreadPool pool(threads);
        std::atomic<int> ran{0};
        EXPECT_THROW(pool.parallel_for(64,
                                       [&](int64_t task) {
                                           ran.fetch_add(1);
                                           if (task == 17) throw std::runtime_error("task 17");
                                       }),
                     std::runtime_error);
        EXPECT_EQ(ran.load(), 64) << "the other tasks still run";
        EXPECT_TRUE(every_task_once(pool, 64));
        std::this_thread::sleep_for(ThreadPool::kSpin * 2);
        EXPECT_TRUE(every_task_once(pool, 8, std::chrono::microseconds(100)));
    }
}

}  // namespace
}  // namespace sy::cpu

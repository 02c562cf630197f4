// The results of `switchyard bench` in llama-bench's formats: md (the table people paste),
// csv, json (an array with samples_ns / samples_ts), jsonl (one object per line) and sql
// (CREATE TABLE llama_bench + INSERTs). Field names follow llama-bench where the concept is the
// same; switchyard adds its own (backends, placement, offload_policy, config, warnings).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "switchyard/llm/benchmark.hpp"

namespace sy::tools {

// One test of one parameter combination, with the values that were in effect (the fused MoE
// op and flash attention as the session chose them, not as asked).
struct BenchRecord {
    std::string model_filename, model_type;
    uint64_t model_size = 0, model_n_params = 0;
    std::string backends;  // loaded backends that hold weights or run nodes: "cpu", "sim,cpu"
    std::string cpu_info, gpu_info;
    int64_t n_batch = 0, n_ubatch = 0;
    int n_threads = 0;
    std::string type_k, type_v;
    int n_gpu_layers = -1, n_cpu_moe = 0;
    bool flash_attn = false, fused_moe = false, use_mmap = true;
    bool grouped_er = true;       // expert_group_count honoured (-ger 1, the default)
    std::string repack = "auto";  // the cpu plugin's option: auto, on, off
    int mla_attn = 3;
    int64_t attn_max_batch = 0;
    std::string ser, override_tensor, config, placement, offload_policy;
    std::string tensor_split;  // llama-bench's form: "3.00/1.00", "0.00" for none
    llm::BenchTest test;
    std::string test_time;  // RFC 3339, UTC
    llm::BenchSamples samples;
    std::vector<std::string> warnings;
};

enum class BenchFormat { md, csv, json, jsonl, sql };
// "md" ... "sql"; throws sy::Error naming -o otherwise.
BenchFormat parse_bench_format(const std::string& name);

// Prints records as they come (csv, jsonl, sql: a line each) or all at the end (md, json:
// columns and brackets depend on every record).
class BenchPrinter {
  public:
    BenchPrinter(BenchFormat format, std::FILE* out) : format_(format), out_(out) {}
    void add(const BenchRecord& record);
    void finish();

  private:
    BenchFormat format_;
    std::FILE* out_;
    std::vector<BenchRecord> records_;
    bool header_done_ = false;
};

}  // namespace sy::tools

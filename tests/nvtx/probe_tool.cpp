// A stand-in for a profiler, for tests/core/test_nvtx.cpp: an NVTX injection
// library (loaded by NVTX from NVTX_INJECTION64_PATH, as Nsight Systems' is)
// that records every range pushed in any domain with its parent range on the
// same thread, and at exit writes to $IMGPIPE_NVTX_PROBE_OUT:
//   domain <name>                  for each domain created
//   range <parent>/<name> <count>  ("-" for a range with no parent)
//   open <n>                       ranges pushed and never popped
//   bad_pops <n>                   pops with no range open on that thread
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace {

struct Record {
  std::mutex m;
  std::set<std::string> names;  // interned range names
  std::map<std::pair<std::string, std::string>, unsigned long> ranges;
  std::set<std::string> domains;
  std::atomic<long> open{0};
  std::atomic<long> bad_pops{0};

  ~Record() {
    const char* path = std::getenv("IMGPIPE_NVTX_PROBE_OUT");
    if (!path) return;
    std::FILE* f = std::fopen(path, "w");
    if (!f) return;
    for (const auto& d : domains) std::fprintf(f, "domain %s\n", d.c_str());
    for (const auto& [k, n] : ranges) std::fprintf(f, "range %s/%s %lu\n", k.first.c_str(), k.second.c_str(), n);
    std::fprintf(f, "open %ld\nbad_pops %ld\n", open.load(), bad_pops.load());
    std::fclose(f);
  }
};

Record g_record;

// This thread's open ranges (interned names: trivially destructible).
constexpr int kMaxDepth = 64;
thread_local const std::string* t_stack[kMaxDepth];
thread_local int t_depth = 0;

nvtxDomainHandle_t create_domain(const char* name) {
  std::lock_guard lk(g_record.m);
  g_record.domains.insert(name ? name : "");
  return reinterpret_cast<nvtxDomainHandle_t>(&g_record);
}

int push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  const char* msg = a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?";
  const std::string* name = nullptr;
  {
    std::lock_guard lk(g_record.m);
    name = &*g_record.names.insert(msg).first;
    const std::string parent = t_depth > 0 && t_depth <= kMaxDepth ? *t_stack[t_depth - 1] : std::string("-");
    ++g_record.ranges[{parent, *name}];
  }
  if (t_depth < kMaxDepth) t_stack[t_depth] = name;
  ++g_record.open;
  return t_depth++;
}

int pop(nvtxDomainHandle_t) {
  if (t_depth == 0) {
    ++g_record.bad_pops;
    return -1;
  }
  --g_record.open;
  return --t_depth;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table ||
      size <= NVTX_CBID_CORE2_DomainCreateA)
    return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create_domain);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  return 1;
}

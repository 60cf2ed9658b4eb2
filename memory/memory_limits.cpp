#include "memory/memory_limits.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "memory/host_resource.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

namespace {

namespace fs = std::filesystem;

// A v1 hierarchy's "no limit" is the largest page count in bytes (9223372036854771712 with
// 4 KiB pages); anything this large limits nothing a machine has.
constexpr size_t kUnlimited = size_t{1} << 62;

std::optional<size_t> soft_limit(int resource) {
  struct rlimit r {};
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<size_t>(r.rlim_cur);
}

// The file's first line, without its newline; nullopt when it cannot be read.
std::optional<std::string> first_line(const fs::path &file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::optional<size_t> parse_bytes(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n'))
    text.remove_suffix(1);
  size_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// A path of the system as a path under root.
fs::path under(const fs::path &root, const std::string &system_path) {
  return root / fs::path(system_path).relative_path();
}

// mountinfo escapes blanks, tabs, newlines and backslashes in paths as octal ("\\040").
std::string unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool octal =
        s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + static_cast<long>(i) + 1, s.begin() + static_cast<long>(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; });
    if (!octal) {
      out += s[i];
      continue;
    }
    out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
    i += 3;
  }
  return out;
}

// "half of what RLIMIT_AS (ulimit -v) of 4 GiB leaves free: 1.2 GiB mapped and 400 MiB kept
// for the threads' stacks and arenas and the libraries"
std::string free_under(const char *name, size_t limit, size_t used, size_t headroom, bool half) {
  return fmt::format(
      "{}what {} of {} leaves free, less {} in use and {} kept for threads and "
      "libraries",
      half ? "half of " : "", name, format_bytes(limit), format_bytes(used),
      format_bytes(headroom));
}

// One cgroup hierarchy as this process sees it.
struct Hierarchy {
  bool v2 = false;
  std::string path;         // the process's cgroup in it (/proc/self/cgroup)
  std::string mount_root;   // the hierarchy's folder mounted (mountinfo's 4th field)
  std::string mount_point;  // where (the 5th)
};

// The v2 hierarchy and the v1 one that has the memory controller, from /proc/self/cgroup
// ("ID:controllers:path"; v2 is "0::path").
std::vector<Hierarchy> memory_hierarchies(const fs::path &root) {
  std::vector<Hierarchy> found;
  std::ifstream in(root / "proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    Hierarchy h;
    h.path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) {
      h.v2 = true;
    } else {
      bool memory = false;
      std::stringstream list(controllers);
      for (std::string c; std::getline(list, c, ',');)
        memory = memory || c == "memory";
      if (!memory) continue;
    }
    found.push_back(std::move(h));
  }
  return found;
}

// Where each hierarchy is mounted: mountinfo's "ID PARENT MAJ:MIN ROOT POINT OPTIONS
// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS". Without mountinfo: the usual places.
void find_mounts(const fs::path &root, std::vector<Hierarchy> &hierarchies) {
  for (Hierarchy &h : hierarchies) {
    h.mount_root = "/";
    h.mount_point = h.v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
  }
  std::ifstream in(root / "proc/self/mountinfo");
  std::string line;
  bool seen[2] = {false, false};
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    for (std::string s; fields >> s;)
      f.push_back(s);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string &type = dash[1];
    bool v2 = type == "cgroup2";
    bool v1_memory = false;
    if (type == "cgroup") {
      std::stringstream list(dash[3]);
      for (std::string o; std::getline(list, o, ',');)
        v1_memory = v1_memory || o == "memory";
    }
    if (!v2 && !v1_memory) continue;
    // The first mount of a hierarchy is the one that counts (later ones are bind mounts).
    if (seen[v2 ? 1 : 0]) continue;
    seen[v2 ? 1 : 0] = true;
    for (Hierarchy &h : hierarchies)
      if (h.v2 == v2) {
        h.mount_root = unescape(f[3]);
        h.mount_point = unescape(f[4]);
      }
  }
}

// The process's cgroup folder, as the system names it.
std::string cgroup_folder(const fs::path &root, const Hierarchy &h) {
  std::string relative = h.path;
  if (h.mount_root != "/") {
    if (relative == h.mount_root) {
      relative = "/";
    } else if (relative.starts_with(h.mount_root + "/")) {
      relative = relative.substr(h.mount_root.size());
    } else {
      // Outside the mounted part (another cgroup namespace's view): the mount is the
      // nearest folder this process can read.
      relative = "/";
    }
  }
  if (relative.find("/..") != std::string::npos) relative = "/";
  fs::path folder = fs::path(h.mount_point) / fs::path(relative).relative_path();
  std::error_code ec;
  if (!fs::is_directory(under(root, folder.string()), ec)) folder = h.mount_point;
  return folder.lexically_normal().string();
}

// The smallest limit on the folder's path up to the mount point.
std::optional<MemoryLimit> cgroup_limit(const fs::path &root, const Hierarchy &h) {
  const char *file_name = h.v2 ? "memory.max" : "memory.limit_in_bytes";
  fs::path folder = cgroup_folder(root, h);
  const fs::path top = fs::path(h.mount_point).lexically_normal();
  std::optional<MemoryLimit> best;
  while (true) {
    const fs::path file = folder / file_name;
    if (std::optional<std::string> text = first_line(under(root, file.string()))) {
      std::optional<size_t> bytes = parse_bytes(*text);  // "max" (v2): no limit
      if (bytes && *bytes < kUnlimited && (!best || *bytes < best->bytes)) {
        best = MemoryLimit{MemoryLimitKind::Cgroup, *bytes, file.string(), 1};
      }
    }
    if (folder == top || !folder.has_relative_path() || folder.parent_path() == folder) break;
    folder = folder.parent_path();
    if (folder.string().size() < top.string().size()) break;
  }
  return best;
}

// "VmRSS:   1812 kB" -> bytes.
size_t status_field(const std::string &text, const char *name) {
  const std::string key = std::string("\n") + name + ":";
  const std::string all = "\n" + text;
  const size_t at = all.find(key);
  if (at == std::string::npos) return 0;
  std::stringstream rest(all.substr(at + key.size()));
  size_t kib = 0;
  rest >> kib;
  return rest ? kib * 1024 : 0;
}

}  // namespace

LimitSources LimitSources::current() {
  LimitSources s;
  s.physical_bytes = physical_memory_bytes();
  s.rlimit_as = soft_limit(RLIMIT_AS);
  s.rlimit_data = soft_limit(RLIMIT_DATA);
  return s;
}

std::vector<MemoryLimit> discover_memory_limits(const LimitSources &sources) {
  std::vector<MemoryLimit> limits;
  limits.push_back({MemoryLimitKind::Physical, sources.physical_bytes, "", 1});
  try {
    std::vector<Hierarchy> hierarchies = memory_hierarchies(sources.root);
    find_mounts(sources.root, hierarchies);
    for (const Hierarchy &h : hierarchies)
      if (std::optional<MemoryLimit> l = cgroup_limit(sources.root, h)) limits.push_back(*l);
  } catch (const std::exception &) {
    // An unreadable or odd tree limits nothing (filesystem errors, a bad_alloc on a huge
    // line): the kernel still enforces the limit, zerort only cannot see it.
  }
  if (sources.rlimit_as)
    limits.push_back({MemoryLimitKind::AddressSpace, *sources.rlimit_as, "", 1});
  if (sources.rlimit_data) limits.push_back({MemoryLimitKind::Data, *sources.rlimit_data, "", 1});
  return limits;
}

LockLimit read_lock_limit(const fs::path &root) {
  LockLimit l;
  struct rlimit r {};
  if (getrlimit(RLIMIT_MEMLOCK, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return l;
  std::ifstream in(root / "proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  // CapEff is hexadecimal; CAP_IPC_LOCK is capability 14.
  const size_t at = s.find("\nCapEff:");
  if (at != std::string::npos) {
    unsigned long long caps = 0;
    std::stringstream hex(s.substr(at + 8));
    hex >> std::hex >> caps;
    if (hex && (caps >> 14) & 1ULL) return l;
  }
  l.limited = true;
  l.limit = static_cast<size_t>(r.rlim_cur);
  l.locked = status_field(s, "VmLck");
  return l;
}

ProcessUsage read_process_usage(const fs::path &root) {
  std::ifstream in(root / "proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  return ProcessUsage{status_field(s, "VmRSS"), status_field(s, "VmSize"),
                      status_field(s, "VmData")};
}

size_t used_under(const MemoryLimit &limit, const ProcessUsage &usage) {
  switch (limit.kind) {
    case MemoryLimitKind::AddressSpace:
      return usage.mapped;
    case MemoryLimitKind::Data:
      return usage.data;
    case MemoryLimitKind::Physical:
    case MemoryLimitKind::Cgroup:
      break;
  }
  return usage.resident;
}

size_t room_under(const MemoryLimit &limit, const ProcessUsage &usage) {
  const size_t share = limit.bytes / static_cast<size_t>(std::max(1, limit.sharing_ranks));
  const size_t used = used_under(limit, usage);
  return share > used ? share - used : 0;
}

const MemoryLimit &tightest_limit(const std::vector<MemoryLimit> &limits,
                                  const ProcessUsage &usage) {
  const MemoryLimit *best = &limits.front();
  for (const MemoryLimit &l : limits)
    if (room_under(l, usage) < room_under(*best, usage)) best = &l;
  return *best;
}

std::string describe_limit(const MemoryLimit &limit) {
  std::string text;
  switch (limit.kind) {
    case MemoryLimitKind::Physical:
      text = "the node's physical memory of " + format_bytes(limit.bytes);
      break;
    case MemoryLimitKind::Cgroup:
      text = "the memory cgroup's limit of " + format_bytes(limit.bytes) + " (" + limit.file + ")";
      break;
    case MemoryLimitKind::AddressSpace:
      text = "RLIMIT_AS (ulimit -v) of " + format_bytes(limit.bytes);
      break;
    case MemoryLimitKind::Data:
      text = "RLIMIT_DATA (ulimit -d) of " + format_bytes(limit.bytes);
      break;
  }
  if (limit.sharing_ranks > 1)
    text += ", shared by " + std::to_string(limit.sharing_ranks) + " ranks on this node";
  return text;
}

const char *how_to_raise(MemoryLimitKind kind) {
  switch (kind) {
    case MemoryLimitKind::Physical:
      return "fewer ranks per node (more nodes)";
    case MemoryLimitKind::Cgroup:
      return "a larger memory limit for the job (Slurm: --mem or --mem-per-cpu)";
    case MemoryLimitKind::AddressSpace:
      return "a larger ulimit -v";
    case MemoryLimitKind::Data:
      return "a larger ulimit -d";
  }
  return "a larger limit";
}

size_t limit_headroom(int threads) {
  const size_t per_thread = (size_t{8} << 20) + (size_t{64} << 20);
  return (size_t{256} << 20) + static_cast<size_t>(std::max(1, threads)) * per_thread;
}

PoolLimit default_pool_limit(const std::vector<MemoryLimit> &limits, const ProcessUsage &usage,
                             size_t headroom) {
  PoolLimit best;
  for (const MemoryLimit &l : limits) {
    size_t bytes = l.bytes;
    std::string why;
    switch (l.kind) {
      case MemoryLimitKind::Physical:
        why = "the node's physical memory";
        break;
      case MemoryLimitKind::Cgroup:
        why = "the memory cgroup's limit (" + l.file + ")";
        break;
      case MemoryLimitKind::Data: {
        const size_t used = usage.data + headroom;
        bytes = l.bytes > used ? l.bytes - used : 0;
        why = free_under("RLIMIT_DATA (ulimit -d)", l.bytes, usage.data, headroom, false);
        break;
      }
      case MemoryLimitKind::AddressSpace: {
        const size_t used = usage.mapped + headroom;
        bytes = (l.bytes > used ? l.bytes - used : 0) / 2;
        why = free_under("RLIMIT_AS (ulimit -v)", l.bytes, usage.mapped, headroom, true);
        break;
      }
    }
    if (best.why.empty() || bytes < best.bytes) best = PoolLimit{bytes, why};
  }
  return best;
}

}  // namespace zrt

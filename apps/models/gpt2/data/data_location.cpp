#include "data/data_location.hpp"

#include <cstdlib>
#include <system_error>

namespace gpt2 {
namespace {

namespace fs = std::filesystem;

// PREFIX/share/zerort/data when this program runs from an installed prefix (PREFIX/bin).
fs::path installed_share() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path share = exe.parent_path().parent_path() / "share" / "zerort" / "data";
  return fs::exists(share / "prepare", ec) ? share : fs::path{};
}

fs::path user_cache() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "zerort" / "data";
  if (const char *home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "zerort" / "data";
  return "zerort-data";
}

}  // namespace

fs::path data_root() {
  if (const char *dir = std::getenv("ZRT_DATA_DIR"); dir && *dir) return dir;
  std::error_code ec;
  // A source tree (the README's commands run from its top) keeps its data beside the apps.
  if (fs::exists("apps/data/prepare", ec) || installed_share().empty()) return "apps/data/cache";
  return user_cache();
}

std::string prepare_command() {
  std::error_code ec;
  if (fs::exists("apps/data/prepare", ec) || installed_share().empty()) return "apps/data/prepare";
  std::string cmd = (installed_share() / "prepare").string();
  if (data_root() != user_cache()) cmd += " --cache " + data_root().string();
  return cmd;
}

}  // namespace gpt2

// Where a run ran, for its metrics and its checkpoints: the batch system's job (Slurm's job
// id, array index, node list, restart count) when there is one, so a file found later says
// which job wrote it.
#pragma once

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace training {

/// {"slurm": {"job_id", "array_job_id", "array_task_id", "nodelist", "restart_count",
/// "ntasks"}} with the variables Slurm set (absent ones left out), or {} outside a job.
inline nlohmann::json job_metadata() {
  nlohmann::json slurm = nlohmann::json::object();
  const char *names[][2] = {{"job_id", "SLURM_JOB_ID"},
                            {"array_job_id", "SLURM_ARRAY_JOB_ID"},
                            {"array_task_id", "SLURM_ARRAY_TASK_ID"},
                            {"nodelist", "SLURM_JOB_NODELIST"},
                            {"restart_count", "SLURM_RESTART_COUNT"},
                            {"ntasks", "SLURM_NTASKS"}};
  for (const auto &n : names)
    if (const char *v = std::getenv(n[1]); v && *v) slurm[n[0]] = v;
  if (slurm.empty()) return nlohmann::json::object();
  return {{"slurm", slurm}};
}

}  // namespace training

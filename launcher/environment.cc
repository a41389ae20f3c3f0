#include "launcher/environment.h"

#include <algorithm>

#include "common/error.h"
#include "common/strings.h"

namespace dsrun::launcher {

const std::vector<std::string> kExportedEnvPrefixes = {
    // runner.py EXPORT_ENVS
    "MLFLOW", "PYTHON", "MV2", "UCX",
    // nebula/constants.py NEBULA_EXPORT_ENVS (matched as prefixes too, like DeepSpeed does)
    "DLTS_JOB_ID", "DLTS_NUM_WORKER", "NEBULA_PERSISTENT_STORAGE_PATH", "NEBULA_PERSISTENT_TIME_INTERVAL",
    "AML_RUN_ID", "AZUREML_RUN_TOKEN", "AZUREML_WORKSPACE_SCOPE", "AZUREML_EXPERIMENT_SCOPE",
    "AZUREML_RUN_HISTORY_SERVICE_ENDPOINT", "AZUREML_RUN_ID", "NEBULA_MEMORY_BUFFER_SIZE",
    "AZUREML_PARAMETER_ITPJOB_NAME", "FC_TASKROLE_NAME", "FC_TASK_INDEX", "MASTER_HOST", "LOCAL_HOST",
    "AZUREML_BLOB_ACCOUNT_NAME", "AZUREML_BLOB_ACCOUNT_KEY",
    // the CUDA accelerator's export_envs()
    "NCCL"};

namespace {

// runner.py EXCLUDE_ENVS: on AISC each node sets these itself, so rank 0's values must not travel.
const char* const kAiscKey = "AISC_JOB_NAME";
const std::vector<std::string> kAiscExcluded = {"NCCL_IB_HCA", "UCX_NET_DEVICES"};

std::string joinPath(const std::string& dir, const std::string& name) {
  if (startsWith(name, "/") || dir.empty()) return name;
  return endsWith(dir, "/") ? dir + name : dir + "/" + name;
}

}  // namespace

std::vector<std::string> envFilePaths(const EnvMap& launcherEnv, const std::string& home, const std::string& cwd) {
  auto it = launcherEnv.find("DS_ENV_FILE");
  const std::string name = it != launcherEnv.end() ? it->second : ".deepspeed_env";
  return {joinPath(home, name), joinPath(cwd, name)};
}

EnvMap parseEnvFile(std::string_view text, const std::string& path) {
  EnvMap vars;
  const std::vector<std::string> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const int lineNo = static_cast<int>(i) + 1;
    const std::string stripped = trim(lines[i]);
    if (stripped.empty() || stripped[0] == '#') continue;
    const size_t eq = lines[i].find('=');
    if (eq == std::string::npos) {
      throw ParseError(path, lineNo, strCat("expected 'NAME=VALUE', got '", stripped, "'"));
    }
    const std::string name = trim(std::string_view(lines[i]).substr(0, eq));
    if (name.empty()) {
      throw ParseError(path, lineNo, strCat("empty variable name, got '", stripped, "'"));
    }
    vars[name] = trim(std::string_view(lines[i]).substr(eq + 1));
  }
  return vars;
}

EnvMap propagatedEnvironment(const EnvMap& launcherEnv, const std::vector<EnvFile>& envFiles,
                             const std::string& cwd) {
  EnvMap source = launcherEnv;
  // DeepSpeed puts the launch directory first on the remote PYTHONPATH so that `import` of local modules
  // works on every node.
  auto pythonPath = source.find("PYTHONPATH");
  source["PYTHONPATH"] = pythonPath == source.end() ? cwd : cwd + ":" + pythonPath->second;

  const bool aisc = launcherEnv.count(kAiscKey) > 0;
  EnvMap exported;
  for (const auto& [name, value] : source) {
    const bool matches = std::any_of(kExportedEnvPrefixes.begin(), kExportedEnvPrefixes.end(),
                                     [&](const std::string& prefix) { return startsWith(name, prefix); });
    const bool excluded =
        aisc && std::find(kAiscExcluded.begin(), kAiscExcluded.end(), name) != kAiscExcluded.end();
    if (matches && !excluded) exported[name] = value;
  }
  for (const EnvFile& file : envFiles) {
    for (const auto& [name, value] : parseEnvFile(file.text, file.path)) exported[name] = value;
  }
  return exported;
}

}  // namespace dsrun::launcher

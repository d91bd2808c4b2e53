// SKELETON: replaced by the ONNX importer.
#include "importers/onnx_import.h"
namespace planner::importers {
Expected<ir::Graph> import_model(const std::string& path, const ImportOptions&) {
  return make_error("{}: ONNX import is not built yet", path);
}
Expected<ir::Graph> import_model_text(const std::string&, const std::string& source_name,
                                      const ImportOptions&) {
  return make_error("{}: ONNX import is not built yet", source_name);
}
}  // namespace planner::importers

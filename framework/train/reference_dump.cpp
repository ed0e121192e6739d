// Writing and reading the reference dump of `ablate run --dump-reference` (reference_dump.hpp)
// with the HDF5 helpers of the run file (results/hdf5_util.hpp).
#include "train/reference_dump.hpp"

#include <algorithm>

#include "ablate/error.hpp"
#include "results/hdf5_util.hpp"

namespace ablate::train {
namespace h5 = results::h5;
namespace {

constexpr hsize_t kChunkSteps = 16;
const char* const kBatchNames[] = {"src", "src_lengths", "tgt_in", "tgt_out", "tgt_lengths"};

// rows [B, width] of `values` (row-major, `width_in` wide) padded on the right to `width` with `fill`.
std::vector<std::int32_t> padded(const std::vector<std::int32_t>& values, std::int64_t rows, std::int64_t width_in,
                                 std::int64_t width, std::int32_t fill) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(rows * width), fill);
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(values.begin() + r * width_in, width_in, out.begin() + r * width);
  return out;
}

template <class T>
DumpArray<T> read_all(const h5::Obj& ds, hid_t mem_type) {
  DumpArray<T> a;
  std::size_t n = 1;
  for (hsize_t d : h5::dims(ds)) {
    a.dims.push_back(static_cast<std::int64_t>(d));
    n *= d;
  }
  a.values.resize(n);
  if (!a.dims.empty()) h5::read_rows(ds, 0, static_cast<hsize_t>(a.dims[0]), mem_type, a.values.data());
  return a;
}

}  // namespace

struct ReferenceDump::Impl {
  h5::Quiet quiet;
  h5::Obj file, root;
  std::map<std::string, h5::Obj> batches;
  h5::Obj loss, lr;
  std::int64_t batch_size = 0, max_src = 0, max_tgt = 0;
  hsize_t steps = 0;
};

ReferenceDump::ReferenceDump(const std::filesystem::path& file, const std::string& resolved_spec_yaml, ParameterStore& store,
                             bool source, std::int64_t batch_size, std::int64_t max_src, std::int64_t max_tgt)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const std::string name = file.string();
  h5::Handle f(H5Fcreate(name.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f)
    throw UsageError("cannot create the reference dump " + name + ": HDF5: " + h5::hdf5_reason(),
                     "--dump-reference never overwrites: name a new file in an existing directory");
  m.file = h5::Obj{std::move(f), name, "/"};
  h5::Handle g(H5Gopen2(m.file.id(), "/", H5P_DEFAULT), H5Gclose);
  if (!g) h5::fail(name, "/", "open group");
  m.root = h5::Obj{std::move(g), name, "/"};
  m.batch_size = batch_size;
  m.max_src = max_src;
  m.max_tgt = max_tgt;
  h5::set_attr(m.root, "spec", resolved_spec_yaml);
  h5::set_attr(m.root, "ignore_index", static_cast<std::int64_t>(HostBatch::kIgnore));

  const h5::Obj params = h5::create_group(m.root, "params", /*track_order=*/true);
  for (Parameter* p : store.all()) {
    const std::vector<float> values = host_floats(store.backend(), p->value);
    std::vector<hsize_t> dims;
    for (std::int64_t d : p->value.shape().dims()) dims.push_back(static_cast<hsize_t>(d));
    h5::create_fixed(params, p->name, H5T_IEEE_F32LE, dims, H5T_NATIVE_FLOAT, values.data());
  }

  const h5::Obj batches = h5::create_group(m.root, "batches", /*track_order=*/true);
  const auto B = static_cast<hsize_t>(batch_size);
  const std::int32_t pad = TaskInfo::kPad, ignore = HostBatch::kIgnore;
  auto add = [&](const char* n, std::vector<hsize_t> row, const std::int32_t* fill) {
    m.batches[n] = h5::create_appendable(batches, n, H5T_STD_I32LE, row, kChunkSteps, /*compress=*/true, H5T_NATIVE_INT32, fill);
  };
  if (source) {
    add("src", {B, static_cast<hsize_t>(max_src)}, &pad);
    add("src_lengths", {B}, &pad);
  }
  add("tgt_in", {B, static_cast<hsize_t>(max_tgt)}, &pad);
  add("tgt_out", {B, static_cast<hsize_t>(max_tgt)}, &ignore);
  add("tgt_lengths", {B}, &pad);
  m.loss = h5::create_appendable(m.root, "loss", H5T_IEEE_F32LE, {}, kChunkSteps, false, H5I_INVALID_HID, nullptr);
  m.lr = h5::create_appendable(m.root, "lr", H5T_IEEE_F64LE, {}, kChunkSteps, false, H5I_INVALID_HID, nullptr);
}

ReferenceDump::~ReferenceDump() = default;

void ReferenceDump::record(const HostBatch& b, float loss, double lr) {
  Impl& m = *impl_;
  if (b.B != m.batch_size || b.S > m.max_src || b.T > m.max_tgt)
    throw Error("reference dump: a batch of " + std::to_string(b.B) + " x (source " + std::to_string(b.S) + ", target " +
                    std::to_string(b.T) + ") does not fit the rows of " + std::to_string(m.batch_size) + " x (" +
                    std::to_string(m.max_src) + ", " + std::to_string(m.max_tgt) + ")",
                "the task produced an example longer than its TaskInfo maximum");
  const hsize_t row = m.steps;
  auto put = [&](const char* n, const std::vector<std::int32_t>& values) {
    const auto it = m.batches.find(n);
    if (it == m.batches.end()) return;
    h5::set_rows(it->second, row + 1);
    h5::write_rows(it->second, row, 1, H5T_NATIVE_INT32, values.data());
  };
  put("src", padded(b.src, b.B, b.S, m.max_src, TaskInfo::kPad));
  put("src_lengths", b.src_lengths);
  put("tgt_in", padded(b.tgt_in, b.B, b.T, m.max_tgt, TaskInfo::kPad));
  put("tgt_out", padded(b.tgt_out, b.B, b.T, m.max_tgt, HostBatch::kIgnore));
  put("tgt_lengths", b.tgt_lengths);
  h5::set_rows(m.loss, row + 1);
  h5::write_rows(m.loss, row, 1, H5T_NATIVE_FLOAT, &loss);
  h5::set_rows(m.lr, row + 1);
  h5::write_rows(m.lr, row, 1, H5T_NATIVE_DOUBLE, &lr);
  m.steps = row + 1;
}

ReferenceData read_reference_dump(const std::filesystem::path& file) {
  h5::Quiet quiet;
  const std::string name = file.string();
  h5::Handle f(H5Fopen(name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f) throw Error("cannot open the reference dump " + name + ": HDF5: " + h5::hdf5_reason());
  const h5::Obj fo{std::move(f), name, "/"};
  h5::Handle g(H5Gopen2(fo.id(), "/", H5P_DEFAULT), H5Gclose);
  if (!g) h5::fail(name, "/", "open group");
  const h5::Obj root{std::move(g), name, "/"};
  ReferenceData d;
  d.spec_yaml = h5::string_attr(root, "spec");
  d.ignore_index = static_cast<std::int32_t>(h5::int_attr(root, "ignore_index"));
  const h5::Obj params = h5::open_group(root, "params");
  for (const std::string& p : h5::children(params)) d.params[p] = read_all<float>(h5::open_dataset(params, p), H5T_NATIVE_FLOAT);
  const h5::Obj batches = h5::open_group(root, "batches");
  for (const char* n : kBatchNames)
    if (h5::has_link(batches, n)) d.batches[n] = read_all<std::int32_t>(h5::open_dataset(batches, n), H5T_NATIVE_INT32);
  d.loss = read_all<float>(h5::open_dataset(root, "loss"), H5T_NATIVE_FLOAT).values;
  d.lr = read_all<double>(h5::open_dataset(root, "lr"), H5T_NATIVE_DOUBLE).values;
  return d;
}

}  // namespace ablate::train

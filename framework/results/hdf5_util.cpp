// RAII handles and typed helpers over the HDF5 C API (hdf5_util.hpp): groups, growing datasets,
// string and integer attributes, and errors that name the file, the object and HDF5's reason.
#include "results/hdf5_util.hpp"

#include <cstring>

#include "ablate/error.hpp"

namespace ablate::results::h5 {
namespace {

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* out) {
  auto* messages = static_cast<std::vector<std::string>*>(out);
  if (err && err->desc && *err->desc) messages->emplace_back(err->desc);
  return 0;
}

std::string str(std::string_view s) { return std::string(s); }

hsize_t product(const std::vector<hsize_t>& d, std::size_t from = 0) {
  hsize_t n = 1;
  for (std::size_t i = from; i < d.size(); ++i) n *= d[i];
  return n;
}

void check(herr_t status, const Obj& at, const std::string& path, const std::string& what) {
  if (status < 0) fail(at.file, path, what);
}

Handle check_id(hid_t id, Handle::Closer close, const Obj& at, const std::string& path, const std::string& what) {
  if (id < 0) fail(at.file, path, what);
  return Handle(id, close);
}

void refuse_nul(const Obj& at, std::string_view name, std::string_view value) {
  if (value.find('\0') != std::string_view::npos)
    throw Error("cannot write attribute '" + str(name) + "' of " + at.path + " in " + at.file + ": the text contains a NUL byte",
                "HDF5 strings end at the first NUL byte; remove it from the value");
}

// A memory string type matching `file_type`'s character set (HDF5 does not convert between sets).
Handle memory_string_type(hid_t file_type, const Obj& at, const std::string& path) {
  Handle t = check_id(H5Tcopy(file_type), H5Tclose, at, path, "copy the string type of");
  if (H5Tis_variable_str(file_type) <= 0) check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), at, path, "read the strings of");
  return t;
}

Handle open_attr(const Obj& obj, std::string_view name) {
  const std::string path = obj.path + "@" + str(name);
  return check_id(H5Aopen(obj.id(), str(name).c_str(), H5P_DEFAULT), H5Aclose, obj, path, "open attribute");
}

void delete_attr_if_present(const Obj& obj, std::string_view name) {
  if (has_attr(obj, name)) check(H5Adelete(obj.id(), str(name).c_str()), obj, obj.path + "@" + str(name), "replace attribute");
}

Handle new_attr(const Obj& obj, std::string_view name, hid_t type, hid_t space) {
  delete_attr_if_present(obj, name);
  return check_id(H5Acreate2(obj.id(), str(name).c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose, obj,
                  obj.path + "@" + str(name), "create attribute");
}

std::size_t attr_points(const Handle& attr, const Obj& obj, const std::string& path) {
  Handle space = check_id(H5Aget_space(attr.get()), H5Sclose, obj, path, "read the shape of attribute");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail(obj.file, path, "read the shape of attribute");
  return static_cast<std::size_t>(n);
}

// Strings stored as `file_type` (variable- or fixed-length) read into `n` std::strings by `read`.
template <class Read>
std::vector<std::string> read_strings(hid_t file_type, std::size_t n, const Obj& at, const std::string& path, Read read) {
  std::vector<std::string> out;
  if (n == 0) return out;
  if (H5Tget_class(file_type) != H5T_STRING)
    throw Error(path + " in " + at.file + " holds no text", "the file does not follow docs/results-format.md");
  Handle mem = memory_string_type(file_type, at, path);
  if (H5Tis_variable_str(file_type) > 0) {
    std::vector<char*> ptrs(n, nullptr);
    read(mem.get(), ptrs.data());
    out.reserve(n);
    for (char* p : ptrs) {
      out.emplace_back(p ? p : "");
      if (p) H5free_memory(p);
    }
  } else {
    const std::size_t width = H5Tget_size(file_type);
    std::vector<char> buf(n * width + 1, '\0');
    read(mem.get(), buf.data());
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const char* s = buf.data() + i * width;
      out.emplace_back(s, strnlen(s, width));
    }
  }
  return out;
}

}  // namespace

Quiet::Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
Quiet::~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

std::string hdf5_reason() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return {};
  if (messages.size() == 1 || messages.front() == messages.back()) return messages.front();
  return messages.front() + " (" + messages.back() + ")";
}

void fail(const std::string& file, const std::string& path, const std::string& what, const std::string& hint) {
  const std::string reason = hdf5_reason();
  throw Error(
      "cannot " + what + " " + path + " in " + file + (reason.empty() ? "" : ": HDF5: " + reason),
      hint.empty() ? "`h5dump -H " + file + "` shows what the file holds; docs/results-format.md what it should hold" : hint);
}

Handle vl_string_type() {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!t || H5Tset_size(t.get(), H5T_VARIABLE) < 0 || H5Tset_cset(t.get(), H5T_CSET_UTF8) < 0)
    throw Error("cannot make an HDF5 string type: " + hdf5_reason());
  return t;
}

Handle fixed_string_type(std::size_t bytes) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!t || H5Tset_size(t.get(), bytes) < 0 || H5Tset_strpad(t.get(), H5T_STR_NULLPAD) < 0 ||
      H5Tset_cset(t.get(), H5T_CSET_UTF8) < 0)
    throw Error("cannot make an HDF5 string type of " + std::to_string(bytes) + " bytes: " + hdf5_reason());
  return t;
}

Handle plist(hid_t cls) {
  Handle p(H5Pcreate(cls), H5Pclose);
  if (!p) throw Error("cannot make an HDF5 property list: " + hdf5_reason());
  return p;
}

Handle scalar_space() {
  Handle s(H5Screate(H5S_SCALAR), H5Sclose);
  if (!s) throw Error("cannot make an HDF5 dataspace: " + hdf5_reason());
  return s;
}

Handle simple_space(const std::vector<hsize_t>& d, const std::vector<hsize_t>* max_dims) {
  Handle s(H5Screate_simple(static_cast<int>(d.size()), d.data(), max_dims ? max_dims->data() : nullptr), H5Sclose);
  if (!s) throw Error("cannot make an HDF5 dataspace: " + hdf5_reason());
  return s;
}

Obj create_group(const Obj& parent, std::string_view name, bool track_order) {
  const std::string path = parent.child(name);
  Handle gcpl = plist(H5P_GROUP_CREATE);
  check(H5Pset_obj_track_times(gcpl.get(), 0), parent, path, "create group");
  if (track_order)
    check(H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), parent, path, "create group");
  Handle g = check_id(H5Gcreate2(parent.id(), str(name).c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose, parent, path,
                      "create group");
  return Obj{std::move(g), parent.file, path};
}

namespace {
// Opens the group or dataset `name` below `parent` (`what`: "group" or "dataset"); a missing link
// is a file that does not follow the schema.
Obj open_object(const Obj& parent, std::string_view name, const char* what, hid_t (*open)(hid_t, const char*, hid_t),
                Handle::Closer close) {
  const std::string path = parent.child(name);
  if (!has_link(parent, name))
    throw Error(parent.file + " has no " + what + " " + path,
                "the file does not follow docs/results-format.md (or is not an Ablate run file)");
  Handle h = check_id(open(parent.id(), str(name).c_str(), H5P_DEFAULT), close, parent, path, std::string("open ") + what);
  return Obj{std::move(h), parent.file, path};
}
}  // namespace

Obj open_group(const Obj& parent, std::string_view name) { return open_object(parent, name, "group", H5Gopen2, H5Gclose); }

Obj open_dataset(const Obj& parent, std::string_view name) { return open_object(parent, name, "dataset", H5Dopen2, H5Dclose); }

bool has_link(const Obj& parent, std::string_view name) {
  const htri_t r = H5Lexists(parent.id(), str(name).c_str(), H5P_DEFAULT);
  if (r < 0) fail(parent.file, parent.child(name), "look up");
  return r > 0;
}

std::vector<std::string> children(const Obj& group) {
  struct Names {
    static herr_t add(hid_t, const char* name, const H5L_info_t*, void* out) {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    }
  };
  Handle gcpl = check_id(H5Gget_create_plist(group.id()), H5Pclose, group, group.path, "list");
  unsigned flags = 0;
  check(H5Pget_link_creation_order(gcpl.get(), &flags), group, group.path, "list");
  const H5_index_t index = (flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> out;
  check(H5Literate(group.id(), index, H5_ITER_INC, nullptr, &Names::add, &out), group, group.path, "list");
  return out;
}

Obj create_appendable(const Obj& parent, std::string_view name, hid_t file_type, const std::vector<hsize_t>& row,
                      hsize_t chunk_rows, bool compress, hid_t fill_type, const void* fill) {
  const std::string path = parent.child(name);
  std::vector<hsize_t> d{0}, max{H5S_UNLIMITED}, chunk{chunk_rows};
  for (hsize_t r : row) {
    d.push_back(r);
    max.push_back(r);
    chunk.push_back(r);
  }
  Handle space = simple_space(d, &max);
  Handle dcpl = plist(H5P_DATASET_CREATE);
  check(H5Pset_obj_track_times(dcpl.get(), 0), parent, path, "create dataset");
  check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), parent, path, "create dataset");
  if (fill) check(H5Pset_fill_value(dcpl.get(), fill_type, fill), parent, path, "create dataset");
  if (compress) {
    check(H5Pset_shuffle(dcpl.get()), parent, path, "create dataset");
    check(H5Pset_deflate(dcpl.get(), 4), parent, path, "create dataset");
  }
  Handle ds = check_id(H5Dcreate2(parent.id(), str(name).c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                       H5Dclose, parent, path, "create dataset");
  return Obj{std::move(ds), parent.file, path};
}

Obj create_fixed(const Obj& parent, std::string_view name, hid_t file_type, const std::vector<hsize_t>& d, hid_t mem_type,
                 const void* data) {
  const std::string path = parent.child(name);
  Handle space = simple_space(d);
  Handle dcpl = plist(H5P_DATASET_CREATE);
  check(H5Pset_obj_track_times(dcpl.get(), 0), parent, path, "create dataset");
  Handle ds = check_id(H5Dcreate2(parent.id(), str(name).c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                       H5Dclose, parent, path, "create dataset");
  if (product(d) > 0) check(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), parent, path, "write dataset");
  return Obj{std::move(ds), parent.file, path};
}

Obj create_strings(const Obj& parent, std::string_view name, const std::vector<std::string>& values) {
  Handle type = vl_string_type();
  std::vector<const char*> ptrs;
  for (const std::string& v : values) {
    refuse_nul(parent, name, v);
    ptrs.push_back(v.c_str());
  }
  return create_fixed(parent, name, type.get(), {values.size()}, type.get(), ptrs.data());
}

std::vector<hsize_t> dims(const Obj& dataset) {
  Handle space = check_id(H5Dget_space(dataset.id()), H5Sclose, dataset, dataset.path, "read the shape of");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(dataset.file, dataset.path, "read the shape of");
  std::vector<hsize_t> d(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), d.data(), nullptr) < 0)
    fail(dataset.file, dataset.path, "read the shape of");
  return d;
}

void set_rows(const Obj& dataset, hsize_t rows) {
  std::vector<hsize_t> d = dims(dataset);
  if (d.empty()) throw Error(dataset.path + " in " + dataset.file + " is not a growing dataset");
  if (d[0] == rows) return;
  d[0] = rows;
  check(H5Dset_extent(dataset.id(), d.data()), dataset, dataset.path, "resize dataset");
}

namespace {
// Selects rows [first, first + count) of `dataset` (shape `d`); returns the file and memory spaces.
std::pair<Handle, Handle> row_spaces(const Obj& dataset, const std::vector<hsize_t>& d, hsize_t first, hsize_t count) {
  Handle file_space = check_id(H5Dget_space(dataset.id()), H5Sclose, dataset, dataset.path, "select rows of");
  std::vector<hsize_t> start(d.size(), 0), n = d;
  start[0] = first;
  n[0] = count;
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, n.data(), nullptr), dataset, dataset.path,
        "select rows of");
  return {std::move(file_space), simple_space(n)};
}
}  // namespace

void write_rows(const Obj& dataset, hsize_t first, hsize_t count, hid_t mem_type, const void* buf) {
  const std::vector<hsize_t> d = dims(dataset);
  if (count == 0 || product(d, 1) == 0) return;
  auto [file_space, mem_space] = row_spaces(dataset, d, first, count);
  check(H5Dwrite(dataset.id(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), dataset, dataset.path,
        "write rows of");
}

void read_rows(const Obj& dataset, hsize_t first, hsize_t count, hid_t mem_type, void* buf) {
  const std::vector<hsize_t> d = dims(dataset);
  if (count == 0 || product(d, 1) == 0) return;
  if (d.empty() || first + count > d[0])
    throw Error("cannot read rows " + std::to_string(first) + ".." + std::to_string(first + count) + " of " + dataset.path +
                " in " + dataset.file + ": it has " + std::to_string(d.empty() ? 0 : d[0]) + " rows");
  auto [file_space, mem_space] = row_spaces(dataset, d, first, count);
  check(H5Dread(dataset.id(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf), dataset, dataset.path,
        "read rows of");
}

std::vector<std::string> read_string_rows(const Obj& dataset, hsize_t first, hsize_t count) {
  const std::vector<hsize_t> d = dims(dataset);
  Handle type = check_id(H5Dget_type(dataset.id()), H5Tclose, dataset, dataset.path, "read the type of");
  const std::size_t n = static_cast<std::size_t>(count * product(d, 1));
  return read_strings(type.get(), n, dataset, dataset.path,
                      [&](hid_t mem, void* buf) { read_rows(dataset, first, count, mem, buf); });
}

void refresh(const Obj& dataset) { check(H5Drefresh(dataset.id()), dataset, dataset.path, "refresh"); }

bool has_attr(const Obj& obj, std::string_view name) {
  const htri_t r = H5Aexists(obj.id(), str(name).c_str());
  if (r < 0) fail(obj.file, obj.path + "@" + str(name), "look up attribute");
  return r > 0;
}

void set_attr(const Obj& obj, std::string_view name, std::string_view value) {
  refuse_nul(obj, name, value);
  Handle type = vl_string_type();
  Handle space = scalar_space();
  Handle a = new_attr(obj, name, type.get(), space.get());
  const std::string copy(value);
  const char* p = copy.c_str();
  check(H5Awrite(a.get(), type.get(), &p), obj, obj.path + "@" + str(name), "write attribute");
}

void set_attr(const Obj& obj, std::string_view name, std::int64_t value) {
  const std::string path = obj.path + "@" + str(name);
  Handle a;
  if (has_attr(obj, name)) {  // rewritten in place: allowed while SWMR writing
    a = open_attr(obj, name);
    Handle stored = check_id(H5Aget_type(a.get()), H5Tclose, obj, path, "read the type of attribute");
    if (H5Tget_class(stored.get()) != H5T_INTEGER || attr_points(a, obj, path) != 1)
      throw Error("attribute " + path + " in " + obj.file + " is not one integer",
                  "the file does not follow docs/results-format.md");
  } else {
    Handle space = scalar_space();
    a = new_attr(obj, name, H5T_STD_I64LE, space.get());
  }
  check(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), obj, path, "write attribute");
}

void set_attr(const Obj& obj, std::string_view name, const std::vector<std::string>& values) {
  Handle type = vl_string_type();
  Handle space = simple_space({values.size()});
  std::vector<const char*> ptrs;
  for (const std::string& v : values) {
    refuse_nul(obj, name, v);
    ptrs.push_back(v.c_str());
  }
  Handle a = new_attr(obj, name, type.get(), space.get());
  if (!values.empty()) check(H5Awrite(a.get(), type.get(), ptrs.data()), obj, obj.path + "@" + str(name), "write attribute");
}

void set_attr(const Obj& obj, std::string_view name, const std::vector<std::int64_t>& values) {
  Handle space = simple_space({values.size()});
  Handle a = new_attr(obj, name, H5T_STD_I64LE, space.get());
  if (!values.empty())
    check(H5Awrite(a.get(), H5T_NATIVE_INT64, values.data()), obj, obj.path + "@" + str(name), "write attribute");
}

void set_fixed_attr(const Obj& obj, std::string_view name, std::string_view value, std::size_t bytes) {
  refuse_nul(obj, name, value);
  const std::string path = obj.path + "@" + str(name);
  Handle a;
  if (has_attr(obj, name)) {  // rewritten in place at the size it was created with (older files: smaller)
    a = open_attr(obj, name);
    Handle stored = check_id(H5Aget_type(a.get()), H5Tclose, obj, path, "read the type of attribute");
    if (H5Tget_class(stored.get()) != H5T_STRING || H5Tis_variable_str(stored.get()) != 0 || H5Tget_size(stored.get()) == 0)
      throw Error("attribute " + path + " in " + obj.file + " is not a fixed-length string",
                  "the file does not follow docs/results-format.md");
    bytes = H5Tget_size(stored.get());
  } else {
    Handle type = fixed_string_type(bytes);
    Handle space = scalar_space();
    a = new_attr(obj, name, type.get(), space.get());
  }
  Handle type = fixed_string_type(bytes);
  std::vector<char> buf(bytes, '\0');
  const std::string fitted = fit_utf8(value, bytes);
  std::memcpy(buf.data(), fitted.data(), fitted.size());
  check(H5Awrite(a.get(), type.get(), buf.data()), obj, path, "write attribute");
}

namespace {
// The one value of an attribute read as a list (`what`: "texts", "numbers").
template <class T>
T the_one(std::vector<T> values, const Obj& obj, std::string_view name, const char* what) {
  if (values.size() != 1)
    throw Error("attribute " + obj.path + "@" + str(name) + " in " + obj.file + " holds " + std::to_string(values.size()) + " " +
                    what + ", not one",
                "the file does not follow docs/results-format.md");
  return std::move(values.front());
}
}  // namespace

std::string string_attr(const Obj& obj, std::string_view name) { return the_one(strings_attr(obj, name), obj, name, "texts"); }

std::vector<std::string> strings_attr(const Obj& obj, std::string_view name) {
  const std::string path = obj.path + "@" + str(name);
  Handle a = open_attr(obj, name);
  Handle type = check_id(H5Aget_type(a.get()), H5Tclose, obj, path, "read the type of attribute");
  const std::size_t n = attr_points(a, obj, path);
  return read_strings(type.get(), n, obj, path,
                      [&](hid_t mem, void* buf) { check(H5Aread(a.get(), mem, buf), obj, path, "read attribute"); });
}

std::int64_t int_attr(const Obj& obj, std::string_view name) { return the_one(ints_attr(obj, name), obj, name, "numbers"); }

std::vector<std::int64_t> ints_attr(const Obj& obj, std::string_view name) {
  const std::string path = obj.path + "@" + str(name);
  Handle a = open_attr(obj, name);
  Handle type = check_id(H5Aget_type(a.get()), H5Tclose, obj, path, "read the type of attribute");
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error("attribute " + path + " in " + obj.file + " is not an integer",
                "the file does not follow docs/results-format.md");
  std::vector<std::int64_t> out(attr_points(a, obj, path));
  if (!out.empty()) check(H5Aread(a.get(), H5T_NATIVE_INT64, out.data()), obj, path, "read attribute");
  return out;
}

std::string fit_utf8(std::string_view s, std::size_t bytes) {
  if (s.size() <= bytes) return std::string(s);
  std::size_t cut = bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut));
}

}  // namespace ablate::results::h5

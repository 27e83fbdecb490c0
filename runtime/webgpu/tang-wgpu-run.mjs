// tang-wgpu-run.mjs - Run a function of a tang WGSL bundle on WebGPU (Dawn).
//
// tang-wgpu-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--out DIR] [--time N]
// tang-wgpu-run --validate BUNDLE_DIR
// tang-wgpu-run --probe
//
// Loads a bundle written by `tang-opt --tang-lower-wgsl="bundle=DIR"`
// (manifest.json plus tang_kernels.wgsl, see docs/Bundle.md), reads one
// .npy file per input argument, runs the function's launches once on the
// first WebGPU adapter and writes output #k (in argument order) to
// DIR/output_<k>.npy: float outputs as float64, i32 outputs as int32, as
// tang-run writes them. --time N then runs the launches N more times,
// timed by GPU timestamps (the adapter's 'timestamp-query', unquantised)
// or else the wall clock. --validate compiles the module and creates every
// kernel's pipeline on Dawn's null backend (Tint's validation, no GPU
// needed) and reports errors with their line and column.
//
// WebGPU comes from the npm package `webgpu` (Dawn for Node), loaded from
// $TANG_WEBGPU_DIR/node_modules (scripts/install-webgpu.sh puts it in
// .deps/webgpu; the `tang-wgpu-run` wrapper beside this file sets it, and
// points Vulkan at the Mesa 25 lavapipe that script unpacks).
//
// Exit codes: 0 success; 1 bad usage, bundle, input, WGSL or a failing
// WebGPU call; 2 no webgpu package or no adapter.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const kNoDeviceExit = 2;

class Failure extends Error {
  constructor(message, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

const usage = `usage: tang-wgpu-run BUNDLE_DIR FUNCTION [INPUT.npy ...] [--size argK=N] [--out DIR] [--time N]
       tang-wgpu-run --validate BUNDLE_DIR
       tang-wgpu-run --probe

Runs FUNCTION of the tang WGSL bundle in BUNDLE_DIR (manifest.json plus
tang_kernels.wgsl, from tang-opt --tang-lower-wgsl="bundle=DIR") on the
first WebGPU adapter, with one .npy file per input argument, in manifest
order (f32/f16 buffers take <f2, <f4 or <f8; i32 buffers <i4 or <i8).

options:
  --out DIR      write output #k to DIR/output_<k>.npy (floats as float64,
                 i32 as int32)
  --size argK=N  the value of the index argument #K (a size)
  --time N       then run the launches N more times and print their median,
                 least and greatest time (GPU timestamps where the adapter
                 has 'timestamp-query', else the wall clock)
  --validate     compile the module and create every kernel's pipeline on
                 Dawn's null backend (no GPU): WGSL errors with line:column
  --probe        only find the adapter: print its name, exit 0, or 2 when
                 there is none
  -h, --help     this text

environment: TANG_WEBGPU_DIR (the folder holding node_modules/webgpu).

exit codes: 0 success, 1 error, 2 no webgpu package or no adapter
`;

// --- .npy files -------------------------------------------------------------

const NPY_TYPES = {
  '<f2': { bytes: 2, read: (v, i) => halfToFloat(v.getUint16(i, true)) },
  '<f4': { bytes: 4, read: (v, i) => v.getFloat32(i, true) },
  '<f8': { bytes: 8, read: (v, i) => v.getFloat64(i, true) },
  '<i4': { bytes: 4, read: (v, i) => v.getInt32(i, true) },
  '<i8': { bytes: 8, read: (v, i) => Number(v.getBigInt64(i, true)) },
};

function readNpy(path) {
  let data;
  try {
    data = readFileSync(path);
  } catch (e) {
    throw new Failure(`cannot read '${path}': ${e.message}`);
  }
  const magic = data.subarray(0, 6).toString('latin1');
  if (magic !== '\x93NUMPY')
    throw new Failure(`${path}: not a .npy file`);
  const major = data[6];
  const headerLength = major === 1 ? data.readUInt16LE(8) : data.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = data.subarray(start, start + headerLength).toString('latin1');
  const descr = /'descr':\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape)
    throw new Failure(`${path}: malformed .npy header`);
  if (fortran[1] === 'True')
    throw new Failure(`${path}: Fortran-ordered arrays are not supported`);
  const type = NPY_TYPES[descr[1]];
  if (!type)
    throw new Failure(`${path}: element type '${descr[1]}' is not supported ` +
                      `(${Object.keys(NPY_TYPES).join(', ')})`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s)
                 .map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const body = data.subarray(start + headerLength);
  if (body.length < count * type.bytes)
    throw new Failure(`${path}: truncated (${body.length} bytes of data for ` +
                      `${count} elements)`);
  const view = new DataView(body.buffer, body.byteOffset, body.length);
  const values = new Float64Array(count);
  for (let i = 0; i < count; ++i)
    values[i] = type.read(view, i * type.bytes);
  return { descr: descr[1], shape: dims, values };
}

function writeNpy(path, descr, shape, bytes) {
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${dims}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'),
                                     Buffer.from(bytes)]));
}

// --- 16-bit floats ----------------------------------------------------------

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0)
    return sign * fraction * 2 ** -24;
  if (exponent === 31)
    return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function floatToHalf(x) {
  // Round to nearest even through the f32 bits.
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exponent = (u >>> 23) & 0xff;
  let mantissa = u & 0x7fffff;
  if (exponent === 0xff)
    return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  let e = exponent - 127 + 15;
  if (e >= 31)
    return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10)
      return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    let half = mantissa >>> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1)))
      ++half;
    return sign | half;
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1)))
    ++half;
  return sign | half;
}

// --- buffers ----------------------------------------------------------------

const DTYPES = {
  f32: { bytes: 4, accepts: ['<f2', '<f4', '<f8'], out: '<f8' },
  f16: { bytes: 2, accepts: ['<f2', '<f4', '<f8'], out: '<f8' },
  i32: { bytes: 4, accepts: ['<i4', '<i8'], out: '<i4' },
};

const numElements = (spec) => spec.shape.reduce((a, b) => a * b, 1);
const shapeString = (shape) => `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;

function dtypeOf(spec, what) {
  const d = DTYPES[spec.dtype];
  if (!d)
    throw new Failure(`${what} is ${spec.dtype}, which WGSL buffers cannot ` +
                      `hold (f32, f16 and i32 only)`);
  return d;
}

/// The bytes of `values` stored as `dtype`.
function encode(dtype, values) {
  const out = new ArrayBuffer(values.length * DTYPES[dtype].bytes);
  const view = new DataView(out);
  values.forEach((x, i) => {
    if (dtype === 'f32')
      view.setFloat32(4 * i, x, true);
    else if (dtype === 'f16')
      view.setUint16(2 * i, floatToHalf(x), true);
    else
      view.setInt32(4 * i, x, true);
  });
  return out;
}

/// Output bytes read back as the .npy the host writes, and their summary.
function decode(dtype, bytes, count) {
  const view = new DataView(bytes);
  const values = dtype === 'i32' ? new Int32Array(count) : new Float64Array(count);
  for (let i = 0; i < count; ++i)
    values[i] = dtype === 'f32' ? view.getFloat32(4 * i, true)
              : dtype === 'f16' ? halfToFloat(view.getUint16(2 * i, true))
                                : view.getInt32(4 * i, true);
  return values;
}

// --- WebGPU -----------------------------------------------------------------

async function loadWebGPU() {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const dir = process.env.TANG_WEBGPU_DIR ||
              join(here, '..', '..', '.deps', 'webgpu');
  const index = join(dir, 'node_modules', 'webgpu', 'index.js');
  if (!existsSync(index))
    throw new Failure(`the npm package webgpu is not installed at ${dir} ` +
                      `(run scripts/install-webgpu.sh, or set ` +
                      `TANG_WEBGPU_DIR)`, kNoDeviceExit);
  const module = await import(pathToFileURL(index).href);
  Object.assign(globalThis, module.globals);
  return module;
}

async function getDevice(webgpu, options, wantFeatures, optionalFeatures = []) {
  const gpu = webgpu.create(options);
  // Dawn's Node bindings crash when the GPU object is collected while a
  // device is alive: keep it for the life of the process.
  globalThis.tangGPU = gpu;
  const adapter = await gpu.requestAdapter();
  if (!adapter)
    throw new Failure('no WebGPU adapter (Dawn found no usable Vulkan ' +
                      'device; scripts/install-webgpu.sh unpacks Mesa 25\'s ' +
                      'lavapipe, which the tang-wgpu-run wrapper selects)',
                      kNoDeviceExit);
  for (const f of wantFeatures)
    if (!adapter.features.has(f))
      throw new Failure(`the adapter lacks the WebGPU feature '${f}' the ` +
                        `bundle needs`);
  // Every limit the kernels may need, as high as the adapter allows.
  const requiredLimits = {};
  for (const name of ['maxStorageBuffersPerShaderStage',
                      'maxStorageBufferBindingSize', 'maxBufferSize',
                      'maxComputeWorkgroupStorageSize',
                      'maxComputeInvocationsPerWorkgroup',
                      'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
                      'maxComputeWorkgroupSizeZ',
                      'maxComputeWorkgroupsPerDimension'])
    requiredLimits[name] = adapter.limits[name];
  const requiredFeatures = [
    ...wantFeatures,
    ...optionalFeatures.filter((f) => adapter.features.has(f))];
  const device = await adapter.requestDevice({
    requiredFeatures, requiredLimits });
  return { adapter, device };
}

function adapterName(adapter) {
  const info = adapter.info;
  return [info.vendor, info.architecture, info.device, info.description]
    .filter((s) => s).join(' ') || 'unnamed adapter';
}

/// The shader module of `source`, or a Failure listing Tint's messages as
/// `file:line:column: error: message`.
async function compileModule(device, source, file) {
  const module = device.createShaderModule({ code: source });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length)
    throw new Failure(errors.map((m) => `${file}:${m.lineNum}:${m.linePos}: ` +
                                        `error: ${m.message}`).join('\n'));
  return module;
}

/// Runs `create` under validation and out-of-memory error scopes; a
/// captured error fails with `what` and Dawn's message.
async function checked(device, what, create) {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const result = create();
  const errors = [await device.popErrorScope(), await device.popErrorScope()];
  const error = errors.find((e) => e);
  if (error)
    throw new Failure(`${what}: ${error.message.trim()}`);
  return result;
}

function loadBundle(dir) {
  let manifest;
  const path = join(dir, 'manifest.json');
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Failure(`cannot read the manifest '${path}': ${e.message}`);
  }
  if (manifest.format !== 'wgsl')
    throw new Failure(`${path}: format '${manifest.format}' is not a WGSL ` +
                      `bundle (tang-opt --tang-lower-wgsl writes "wgsl")`);
  if (manifest.version !== 1 || !Array.isArray(manifest.functions) ||
      typeof manifest.image !== 'string')
    throw new Failure(`${path}: not a version-1 tang manifest`);
  const file = join(dir, manifest.image);
  let source;
  try {
    source = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Failure(`cannot read the module '${file}': ${e.message}`);
  }
  return { manifest, source, file };
}

/// A size ([constant, coefficients...], docs/Bundle.md) at `values`.
function evaluateSize(terms, values) {
  let v = terms[0];
  for (let i = 1; i < terms.length; ++i)
    v += terms[i] * (values[i - 1] ?? 0);
  return v;
}

/// `fn` at the sizes its inputs' shapes and `sizeArgs` (index arguments by
/// number) give, as runtime/common/Manifest.cpp's FunctionSpec::instantiate:
/// shapes resolved, size arguments gone, the sizes buffer a temporary with
/// the symbols' values; a missing size or a broken requirement fails
/// before anything runs.
function instantiate(fn, inputShapes, sizeArgs) {
  const symbolic = fn.sizes !== undefined ||
    fn.args.some((a) => a.role === 'size') ||
    fn.launches.some((l) => l.args.some((a) => 'sizes' in a));
  if (!symbolic)
    return fn;
  const inputOf = new Map();
  fn.args.forEach((a, i) => { if (a.role === 'input') inputOf.set(i, inputOf.size); });
  const values = (fn.sizes ?? []).map((s) => {
    let v;
    if (s.dim === undefined) {
      if (!sizeArgs.has(s.arg))
        throw new Failure(`'${fn.name}': argument #${s.arg} is a size ` +
                          `(${s.name}): give it with --size arg${s.arg}=N`);
      v = sizeArgs.get(s.arg);
    } else {
      v = inputShapes[inputOf.get(s.arg)][s.dim];
    }
    return v;
  });
  for (const arg of sizeArgs.keys())
    if (fn.args[arg]?.role !== 'size')
      throw new Failure(`'${fn.name}': --size arg${arg} names no size argument`);
  for (const r of fn.requirements ?? []) {
    if (evaluateSize(r.size, values) >= 0)
      continue;
    const used = fn.sizes.filter((s, i) => r.size[i + 1])
      .map((s) => `${s.name} = ${values[fn.sizes.indexOf(s)]}`).join(', ');
    throw new Failure(`'${fn.name}': the sizes break a requirement: ` +
                      `${r.what} only if ${r.condition}, but ${used}; ` +
                      `nothing ran`);
  }
  const resolve = (b) => ({ ...b, shape: b.shape.map((d) =>
    Array.isArray(d) ? evaluateSize(d, values) : d) });
  const argIndex = new Map();
  const args = [];
  fn.args.forEach((a, i) => {
    if (a.role === 'size')
      return;
    argIndex.set(i, args.length);
    args.push(resolve(a));
  });
  const temporaries = fn.temporaries.map(resolve);
  const sizesTemp = temporaries.length;
  temporaries.push({ shape: [Math.max(1, values.length)], dtype: 'i32',
                     init: values.length ? values : [0] });
  for (const a of args)
    if (a.alias !== undefined)
      a.alias = argIndex.get(a.alias);
  const launches = fn.launches.map((l) => ({ ...l, args: l.args.map((a) =>
    'sizes' in a ? { temp: sizesTemp }
    : 'arg' in a ? { ...a, arg: argIndex.get(a.arg) } : a) }));
  const indexChecks = (fn.index_checks ?? []).map((c) =>
    ({ ...c, arg: argIndex.get(c.arg) }));
  return { ...fn, args, temporaries, launches, index_checks: indexChecks };
}

/// The function's index checks (docs/Bundle.md, "Index checks") on its
/// inputs' values `npys` (in input order): an element outside its
/// dimension fails before any device work.
function checkIndices(fn, npys, inputPaths) {
  for (const c of fn.index_checks ?? []) {
    const k = fn.args.slice(0, c.arg).filter((a) => a.role === 'input').length;
    if (fn.args[c.arg]?.role !== 'input' || !npys[k])
      throw new Failure(`'${fn.name}': index check ${JSON.stringify(c)} ` +
                        `names no input`);
    const e = npys[k].values.findIndex((v) => !(v >= 0 && v < c.bound));
    if (e >= 0)
      throw new Failure(`input #${k} (${inputPaths[k]}): element ${e} is ` +
                        `${npys[k].values[e]}, outside [0, ${c.bound}) for ` +
                        `${c.what}; nothing ran`);
  }
}

/// The buffer spec a launch argument names.
function launchBuffer(fn, arg, where) {
  const list = 'temp' in arg ? fn.temporaries : fn.args;
  const index = 'temp' in arg ? arg.temp : arg.arg;
  if (!Number.isInteger(index) || index < 0 || index >= list.length)
    throw new Failure(`${where}: argument ${JSON.stringify(arg)} names no ` +
                      `buffer`);
  return 'temp' in arg ? fn.args.length + index : index;
}

/// An explicit layout: every launch argument a read-write storage buffer,
/// bound in parameter order.
function pipelineFor(device, module, kernel, count) {
  const entries = [];
  for (let i = 0; i < count; ++i)
    entries.push({ binding: i, visibility: GPUShaderStage.COMPUTE,
                   buffer: { type: 'storage' } });
  const bindGroupLayout = device.createBindGroupLayout({ entries });
  const layout = device.createPipelineLayout({
    bindGroupLayouts: [bindGroupLayout] });
  return { bindGroupLayout, pipeline: device.createComputePipeline({
    layout, compute: { module, entryPoint: kernel } }) };
}

async function validate(webgpu, dir) {
  const { manifest, source, file } = loadBundle(dir);
  const wantsHalf = /^enable f16;/m.test(source);
  const { device } = await getDevice(webgpu, ['backend=null'],
                                     wantsHalf ? ['shader-f16'] : []);
  const module = await compileModule(device, source, file);
  // Pipelines check the entry points and their bindings; a kernel binding
  // more storage buffers than the null device's limit (WebGPU's default,
  // 8; real adapters often allow more) is checked by the module alone.
  const limit = device.limits.maxStorageBuffersPerShaderStage;
  let created = 0;
  const beyond = [];
  for (const fn of manifest.functions)
    for (const launch of fn.launches) {
      if (launch.args.length > limit) {
        beyond.push(`${launch.kernel} (${launch.args.length})`);
        continue;
      }
      await checked(device, `${file}: kernel ${launch.kernel}`,
                    () => pipelineFor(device, module, launch.kernel,
                                      launch.args.length));
      ++created;
    }
  console.log(`${file}: valid WGSL, ${created} kernel pipelines created`);
  if (beyond.length)
    console.log(`  not created: ${beyond.join(', ')} bind more storage ` +
                `buffers than WebGPU's default limit (${limit}); they need ` +
                `an adapter that allows more`);
  device.destroy();
}

async function run(webgpu, dir, name, inputPaths, outDir, sizeArgs,
                   timeRuns) {
  const { manifest, source, file } = loadBundle(dir);
  const symbolicFn = manifest.functions.find((f) => f.name === name);
  if (!symbolicFn)
    throw new Failure(`no function '${name}' in ${dir} (functions: ` +
                      `${manifest.functions.map((f) => f.name).join(', ')})`);
  const nInputs = symbolicFn.args.filter((a) => a.role === 'input').length;
  if (inputPaths.length !== nInputs)
    throw new Failure(`function '${name}' takes ${nInputs} inputs, ` +
                      `got ${inputPaths.length}`);
  // Inputs first: a bad file fails before any device work; their shapes
  // and --size give the function's sizes.
  const npys = inputPaths.map((path) => readNpy(path));
  const fn = instantiate(symbolicFn, npys.map((n) => n.shape), sizeArgs);
  checkIndices(fn, npys, inputPaths);
  const inputs = fn.args.filter((a) => a.role === 'input');
  const specs = [...fn.args, ...fn.temporaries];
  specs.forEach((s, i) => dtypeOf(s, `buffer #${i} of '${name}'`));

  const data = inputPaths.map((path, i) => {
    const npy = npys[i];
    const spec = inputs[i];
    if (!DTYPES[spec.dtype].accepts.includes(npy.descr))
      throw new Failure(`input #${i} (${path}) holds '${npy.descr}'; the ` +
                        `${spec.dtype} argument takes ` +
                        `${DTYPES[spec.dtype].accepts.join(', ')}`);
    if (npy.shape.join() !== spec.shape.join())
      throw new Failure(`input #${i} (${path}) has shape ` +
                        `${shapeString(npy.shape)}; the function expects ` +
                        `${shapeString(spec.shape)}`);
    return encode(spec.dtype, npy.values);
  });

  const wantsHalf = specs.some((s) => s.dtype === 'f16') ||
                    /^enable f16;/m.test(source);
  // Timing wants unquantised GPU timestamps (Dawn rounds them by default).
  const { adapter, device } = await getDevice(
    webgpu, timeRuns ? ['disable-dawn-features=timestamp_quantization'] : [],
    wantsHalf ? ['shader-f16'] : [], timeRuns ? ['timestamp-query'] : []);
  let lost = null;
  device.lost.then((info) => { lost = info; });
  const limits = device.limits;
  const module = await compileModule(device, source, file);

  // One buffer per argument and temporary, rounded up to 4 bytes. Inputs
  // are uploaded; everything else is poisoned with 0xff bytes (NaN for
  // floats) so that an element a kernel fails to write shows.
  let nextInput = 0;
  const buffers = await checked(device, 'allocating the buffers', () =>
    specs.map((spec, i) => {
      // An output updated in place is its input's buffer (set below).
      if (i < fn.args.length && spec.alias !== undefined)
        return null;
      const bytes = numElements(spec) * DTYPES[spec.dtype].bytes;
      if (bytes > limits.maxStorageBufferBindingSize)
        throw new Failure(`buffer #${i} of '${name}' takes ${bytes} bytes, ` +
                          `more than the adapter binds ` +
                          `(${limits.maxStorageBufferBindingSize})`);
      const size = Math.max(4, Math.ceil(bytes / 4) * 4);
      const buffer = device.createBuffer({
        size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
                     GPUBufferUsage.COPY_DST });
      const init = new Uint8Array(size).fill(0xff);
      if (i < fn.args.length && spec.role === 'input')
        init.set(new Uint8Array(data[nextInput++]));
      else if (spec.init)
        init.set(new Uint8Array(encode(spec.dtype, spec.init)));
      else if (spec.data) {
        // A tensor constant: its contents, from the bundle's file.
        const bytes = readFileSync(join(dir, spec.data));
        if (bytes.length !== numElements(spec) * DTYPES[spec.dtype].bytes)
          throw new Failure(`${join(dir, spec.data)}: ${bytes.length} bytes, ` +
                            `but the constant takes ` +
                            `${numElements(spec) * DTYPES[spec.dtype].bytes}`);
        init.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
      }
      device.queue.writeBuffer(buffer, 0, init);
      return buffer;
    }));

  fn.args.forEach((spec, i) => {
    if (spec.alias !== undefined)
      buffers[i] = buffers[spec.alias];
  });
  const pipelines = new Map();
  const passes = [];
  for (const [l, launch] of fn.launches.entries()) {
    const where = `launch #${l} (${launch.kernel})`;
    if (launch.args.length > limits.maxStorageBuffersPerShaderStage)
      throw new Failure(`${where} binds ${launch.args.length} storage ` +
                        `buffers; the adapter allows ` +
                        `${limits.maxStorageBuffersPerShaderStage}`);
    for (const [d, n] of launch.grid.entries())
      if (n > limits.maxComputeWorkgroupsPerDimension)
        throw new Failure(`${where} has ${n} workgroups in dimension ${d}; ` +
                          `the adapter allows ` +
                          `${limits.maxComputeWorkgroupsPerDimension}`);
    if (!pipelines.has(launch.kernel))
      pipelines.set(launch.kernel, await checked(
        device, `${file}: creating the pipeline of ${launch.kernel}`,
        () => pipelineFor(device, module, launch.kernel, launch.args.length)));
    const { pipeline, bindGroupLayout } = pipelines.get(launch.kernel);
    const bindGroup = await checked(device, `${where}: binding its buffers`,
      () => device.createBindGroup({
        layout: bindGroupLayout,
        entries: launch.args.map((a, i) => ({
          binding: i, resource: { buffer: buffers[launchBuffer(fn, a, where)] },
        })) }));
    passes.push({ pipeline, bindGroup, grid: launch.grid });
  }
  // The launches, a compute pass each; with `querySet`, the first pass
  // writes timestamp 0 at its beginning and the last timestamp 1 at its end.
  const encodeLaunches = (encoder, querySet) => {
    passes.forEach(({ pipeline, bindGroup, grid }, l) => {
      // Only the first and the last pass write timestamps (a pass naming
      // the query set with neither index is invalid).
      const writes = {};
      if (querySet && l === 0)
        writes.beginningOfPassWriteIndex = 0;
      if (querySet && l === passes.length - 1)
        writes.endOfPassWriteIndex = 1;
      const pass = encoder.beginComputePass(
        Object.keys(writes).length
          ? { timestampWrites: { querySet, ...writes } } : {});
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(...grid);
      pass.end();
    });
  };
  const encoder = device.createCommandEncoder();
  encodeLaunches(encoder, null);
  const outputs = fn.args.map((s, i) => ({ spec: s, i }))
                    .filter(({ spec }) => spec.role === 'output');
  const readbacks = outputs.map(({ i }) => {
    const rb = device.createBuffer({ size: buffers[i].size,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.copyBufferToBuffer(buffers[i], 0, rb, 0, buffers[i].size);
    return rb;
  });
  device.pushErrorScope('validation');
  device.queue.submit([encoder.finish()]);
  const submitError = await device.popErrorScope();
  if (submitError)
    throw new Failure(`submitting the launches: ${submitError.message.trim()}`);
  await Promise.all(readbacks.map((rb) => rb.mapAsync(GPUMapMode.READ)));
  if (lost)
    throw new Failure(`the device was lost: ${lost.message}`);

  console.log(`${name} on ${adapterName(adapter)}: ${fn.launches.length} ` +
              `launches`);
  if (outDir)
    mkdirSync(outDir, { recursive: true });
  outputs.forEach(({ spec }, k) => {
    const count = numElements(spec);
    const values = decode(spec.dtype, readbacks[k].getMappedRange(), count);
    let lo = Infinity, hi = -Infinity, nans = 0;
    for (const x of values) {
      if (Number.isNaN(x)) {
        ++nans;
        continue;
      }
      lo = Math.min(lo, x);
      hi = Math.max(hi, x);
    }
    console.log(`  output #${k}  ${shapeString(spec.shape)} ${spec.dtype}  ` +
                `min ${lo}  max ${hi}${nans ? `  NaN ${nans}` : ''}`);
    if (outDir)
      writeNpy(join(outDir, `output_${k}.npy`), DTYPES[spec.dtype].out,
               spec.shape, values.buffer);
  });
  if (timeRuns && passes.length)
    await time(device, encodeLaunches, timeRuns, () => lost);
  device.destroy();
}

/// Runs the launches `runs` more times (after the checked run: they run in
/// place) and prints the median, least and greatest time in tang-vk-run's
/// format: GPU timestamps written by the first and the last pass where the
/// adapter has 'timestamp-query', else the wall clock from each submit to
/// the queue's completion.
async function time(device, encodeLaunches, runs, lostInfo) {
  const stamps = device.features.has('timestamp-query');
  const querySet = stamps
    ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolve = stamps && device.createBuffer({
    size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const ms = [];
  for (let r = 0; r < runs; ++r) {
    const encoder = device.createCommandEncoder();
    encodeLaunches(encoder, querySet);
    let readback = null;
    if (stamps) {
      readback = device.createBuffer({
        size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      encoder.resolveQuerySet(querySet, 0, 2, resolve, 0);
      encoder.copyBufferToBuffer(resolve, 0, readback, 0, 16);
    }
    const start = process.hrtime.bigint();
    device.pushErrorScope('validation');
    device.queue.submit([encoder.finish()]);
    const error = await device.popErrorScope();
    if (error)
      throw new Failure(`submitting the timed launches: ${error.message.trim()}`);
    await device.queue.onSubmittedWorkDone();
    const wall = Number(process.hrtime.bigint() - start) * 1e-6;
    if (lostInfo())
      throw new Failure(`the device was lost: ${lostInfo().message}`);
    if (stamps) {
      await readback.mapAsync(GPUMapMode.READ);
      const [t0, t1] = new BigUint64Array(readback.getMappedRange());
      ms.push(Number(t1 - t0) * 1e-6);
      readback.unmap();
      readback.destroy();
    } else {
      ms.push(wall);
    }
  }
  ms.sort((a, b) => a - b);
  console.log(`  time: median ${ms[ms.length >> 1].toFixed(4)} ms, least ` +
              `${ms[0].toFixed(4)}, greatest ${ms[ms.length - 1].toFixed(4)} ` +
              `over ${runs} runs (${stamps ? 'GPU timestamps' : 'wall clock'}` +
              `; buffers in device memory)`);
}

async function main(argv) {
  const positional = [];
  const sizeArgs = new Map();
  let outDir = '', mode = 'run', timeRuns = 0;
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(usage);
      return 0;
    } else if (a === '--out') {
      if (i + 1 >= argv.length)
        throw new Failure('--out needs a directory');
      outDir = argv[++i];
    } else if (a === '--time') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 100000)
        throw new Failure('--time needs a number of runs from 1 to 100000');
      timeRuns = n;
    } else if (a === '--size') {
      const spec = argv[++i] ?? '';
      const m = /^arg(\d+)=(\d+)$/.exec(spec);
      if (!m)
        throw new Failure(`--size ${spec}: expected argK=N (the index ` +
                          `argument #K), N >= 0`);
      sizeArgs.set(Number(m[1]), Number(m[2]));
    } else if (a === '--probe' || a === '--validate') {
      mode = a.slice(2);
    } else if (a.startsWith('-')) {
      throw new Failure(`unknown option '${a}'`);
    } else {
      positional.push(a);
    }
  }
  if (mode === 'probe' && positional.length)
    throw new Failure('--probe takes no other arguments');
  if (mode === 'validate' && positional.length !== 1)
    throw new Failure('--validate takes one bundle directory');
  if (mode === 'run' && positional.length < 2)
    throw new Failure('expected a bundle directory and a function name');

  const webgpu = await loadWebGPU();
  if (mode === 'probe') {
    const { adapter, device } = await getDevice(webgpu, [], []);
    console.log(adapterName(adapter));
    device.destroy();
  } else if (mode === 'validate') {
    await validate(webgpu, positional[0]);
  } else {
    await run(webgpu, positional[0], positional[1], positional.slice(2),
              outDir, sizeArgs, timeRuns);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    if (e instanceof Failure) {
      process.stderr.write(`tang-wgpu-run: error: ${e.message}\n`);
      if (e.exitCode === 1 && e.message.startsWith('expected'))
        process.stderr.write(usage);
      process.exit(e.exitCode);
    }
    process.stderr.write(`tang-wgpu-run: internal error: ${e.stack}\n`);
    process.exit(1);
  });

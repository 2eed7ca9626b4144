// The demo scene: instanced meshes lit by one directional light, with a
// depth32float shadow map filtered with 3x3 PCF.

struct Globals {
  view_proj: mat4x4f,
  light_view_proj: mat4x4f,
  light_dir: vec4f,   // xyz: direction the light travels; w: unused
  camera_pos: vec4f,  // xyz: eye; w: shadow map size in texels
};

@group(0) @binding(0) var<uniform> globals: Globals;
@group(1) @binding(0) var shadow_map: texture_depth_2d;
@group(1) @binding(1) var shadow_sampler: sampler_comparison;

struct Vertex {
  @location(0) position: vec3f,
  @location(1) normal: vec3f,
};

struct Instance {
  @location(2) pos_scale: vec4f,  // xyz: position; w: uniform scale
  @location(3) color: vec4f,      // rgb: albedo; a: shape id (unused here)
  @location(4) rot_scale: vec4f,  // x: rotation about y (radians); yzw: per-axis scale
};

fn world_of(v: Vertex, inst: Instance) -> vec3f {
  let c = cos(inst.rot_scale.x);
  let s = sin(inst.rot_scale.x);
  let scaled = v.position * inst.rot_scale.yzw * inst.pos_scale.w;
  let rotated = vec3f(c * scaled.x + s * scaled.z, scaled.y, -s * scaled.x + c * scaled.z);
  return rotated + inst.pos_scale.xyz;
}

fn normal_of(v: Vertex, inst: Instance) -> vec3f {
  let c = cos(inst.rot_scale.x);
  let s = sin(inst.rot_scale.x);
  let n = v.normal / inst.rot_scale.yzw;
  return normalize(vec3f(c * n.x + s * n.z, n.y, -s * n.x + c * n.z));
}

@vertex
fn vs_shadow(v: Vertex, inst: Instance) -> @builtin(position) vec4f {
  return globals.light_view_proj * vec4f(world_of(v, inst), 1.0);
}

struct Varyings {
  @builtin(position) clip: vec4f,
  @location(0) world: vec3f,
  @location(1) normal: vec3f,
  @location(2) color: vec3f,
  @location(3) shadow_pos: vec3f,
};

@vertex
fn vs_main(v: Vertex, inst: Instance) -> Varyings {
  let world = world_of(v, inst);
  var out: Varyings;
  out.clip = globals.view_proj * vec4f(world, 1.0);
  out.world = world;
  out.normal = normal_of(v, inst);
  out.color = inst.color.rgb;
  let light_clip = globals.light_view_proj * vec4f(world, 1.0);
  // Clip space to shadow-map UV (y flipped) and depth.
  out.shadow_pos = vec3f(light_clip.xy * vec2f(0.5, -0.5) + vec2f(0.5), light_clip.z);
  return out;
}

fn shadow_factor(p: vec3f) -> f32 {
  let texel = 1.0 / globals.camera_pos.w;
  var lit = 0.0;
  for (var y = -1; y <= 1; y++) {
    for (var x = -1; x <= 1; x++) {
      let offset = vec2f(f32(x), f32(y)) * texel;
      lit += textureSampleCompareLevel(shadow_map, shadow_sampler, p.xy + offset, p.z - 0.002);
    }
  }
  let inside = all(p.xy >= vec2f(0.0)) && all(p.xy <= vec2f(1.0)) && p.z <= 1.0;
  return select(1.0, lit / 9.0, inside);
}

@fragment
fn fs_main(in: Varyings) -> @location(0) vec4f {
  let n = normalize(in.normal);
  let to_light = -normalize(globals.light_dir.xyz);
  let diffuse = max(dot(n, to_light), 0.0);
  let to_eye = normalize(globals.camera_pos.xyz - in.world);
  let half_dir = normalize(to_light + to_eye);
  let specular = pow(max(dot(n, half_dir), 0.0), 32.0) * 0.25;
  let shadow = shadow_factor(in.shadow_pos);
  let ambient = 0.22;
  let sky = 0.08 * (n.y * 0.5 + 0.5);
  let color = in.color * (ambient + sky + diffuse * shadow * 0.85) + vec3f(specular * shadow);
  return vec4f(pow(color, vec3f(1.0 / 2.2)), 1.0);
}

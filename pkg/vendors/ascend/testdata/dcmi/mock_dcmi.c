/*
Copyright The accel-dra Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

/*
 * A mock of Huawei's libdcmi.so for accel-dra's tests, written for them
 * (no vendor code): the tests build it with
 *   gcc -shared -fPIC -o libdcmi.so mock_dcmi.c
 * and the Ascend backend loads it as it loads the real library. It serves
 * the node described by the fixture file named in ACCEL_DRA_DCMI_FIXTURE
 * (format in README.md beside this file), re-read by every dcmi_init, and
 * keeps the vNPUs it creates in the file named in ACCEL_DRA_DCMI_STATE
 * when that is set, so separate processes (the node agent, a test) see
 * the same vNPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcmi.h"

/* DCMI return codes (mind-cluster dcmi constants and the DCMI reference). */
#define DCMI_OK 0
#define DCMI_ERR_INVALID_PARAMETER (-8001)
#define DCMI_ERR_OPER_NOT_PERMITTED (-8002)
#define DCMI_ERR_DEVICE_NOT_EXIST (-8008)
#define DCMI_ERR_RESOURCE_OCCUPIED (-8020)
#define DCMI_ERR_NOT_SUPPORT (-8255)

#define MAX_CHIPS 64
#define MAX_CODES 16
#define MAX_VDEVS 256
#define MAX_FAILS 16

struct chip {
    int card, device, logic, phy;
    char name[MAX_CHIP_NAME_LEN];
    unsigned int aicore;
    unsigned long long hbm_mb, ddr_mb;
    int domain;
    unsigned int bus, dev, fn, pci_device_id;
    unsigned int health;
    unsigned int codes[MAX_CODES];
    int ncodes;
    int has_ip;
    unsigned char ip[4], mask[4];
};

struct vdev {
    int logic;
    unsigned int id;
    char template_name[TEMPLATE_NAME_LEN];
};

struct fail {
    char fn[64];
    int code;
};

static struct chip chips[MAX_CHIPS];
static int nchips;
static int topo[MAX_CHIPS][MAX_CHIPS]; /* by logic id; -1 = default */
static int topo_default = DCMI_TOPO_TYPE_SYS;
static int docker_mode = 1;
static struct vdev vdevs[MAX_VDEVS];
static int nvdevs;
static struct fail fails[MAX_FAILS];
static int nfails;
static int initialized;

static int failing(const char *fn) {
    for (int i = 0; i < nfails; i++) {
        if (strcmp(fails[i].fn, fn) == 0) {
            return fails[i].code;
        }
    }
    return 0;
}

#define FAIL_IF_ASKED()                      \
    do {                                     \
        int rc_ = failing(__func__);         \
        if (rc_ != 0) {                      \
            return rc_;                      \
        }                                    \
        if (!initialized) {                  \
            return DCMI_ERR_OPER_NOT_PERMITTED; \
        }                                    \
    } while (0)

static struct chip *by_card(int card, int device) {
    for (int i = 0; i < nchips; i++) {
        if (chips[i].card == card && chips[i].device == device) {
            return &chips[i];
        }
    }
    return NULL;
}

static struct chip *by_logic(int logic) {
    for (int i = 0; i < nchips; i++) {
        if (chips[i].logic == logic) {
            return &chips[i];
        }
    }
    return NULL;
}

static int parse_ip(const char *s, unsigned char ip[4], unsigned char mask[4]) {
    unsigned int a, b, c, d, bits;
    if (sscanf(s, "%u.%u.%u.%u/%u", &a, &b, &c, &d, &bits) != 5 || bits > 32) {
        return -1;
    }
    ip[0] = a, ip[1] = b, ip[2] = c, ip[3] = d;
    unsigned long m = bits == 0 ? 0 : 0xffffffffUL << (32 - bits);
    mask[0] = m >> 24, mask[1] = m >> 16, mask[2] = m >> 8, mask[3] = m;
    return 0;
}

static int topo_code(const char *s) {
    static const char *names[] = {"X", "SYS", "PHB", "HCCS", "PXB", "PIX", "SIO", "HCCS_SW", "UB", "NA"};
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static void load_state(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_STATE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    nvdevs = 0;
    struct vdev v;
    while (nvdevs < MAX_VDEVS && fscanf(f, "%d %u %31s", &v.logic, &v.id, v.template_name) == 3) {
        vdevs[nvdevs++] = v;
    }
    fclose(f);
}

static void save_state(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_STATE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        return;
    }
    for (int i = 0; i < nvdevs; i++) {
        fprintf(f, "%d %u %s\n", vdevs[i].logic, vdevs[i].id, vdevs[i].template_name);
    }
    fclose(f);
}

/* load reads the fixture; it returns 0, or the line number of a line it
 * cannot read (the mock then fails dcmi_init, so a broken fixture shows). */
static int load(void) {
    const char *path = getenv("ACCEL_DRA_DCMI_FIXTURE");
    nchips = 0, nvdevs = 0, nfails = 0, docker_mode = 1, topo_default = DCMI_TOPO_TYPE_SYS;
    memset(topo, -1, sizeof(topo));
    if (path == NULL) {
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[512];
    int no = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        no++;
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char kind[32] = "";
        if (sscanf(line, "%31s", kind) != 1) {
            continue;
        }
        int ok = 0;
        if (strcmp(kind, "chip") == 0 && nchips < MAX_CHIPS) {
            struct chip *c = &chips[nchips];
            memset(c, 0, sizeof(*c));
            ok = sscanf(line, "chip %d %d %d %d %31s %u %llu %llu %x:%x:%x.%x %x %u", &c->card, &c->device, &c->logic,
                        &c->phy, c->name, &c->aicore, &c->hbm_mb, &c->ddr_mb, (unsigned int *)&c->domain, &c->bus,
                        &c->dev, &c->fn, &c->pci_device_id, &c->health) == 14;
            if (ok) {
                nchips++;
            }
        } else if (strcmp(kind, "error") == 0) {
            int logic;
            unsigned int code;
            struct chip *c;
            ok = sscanf(line, "error %d %x", &logic, &code) == 2 && (c = by_logic(logic)) != NULL && c->ncodes < MAX_CODES;
            if (ok) {
                c->codes[c->ncodes++] = code;
            }
        } else if (strcmp(kind, "health") == 0) {
            int logic;
            unsigned int health;
            struct chip *c;
            ok = sscanf(line, "health %d %u", &logic, &health) == 2 && (c = by_logic(logic)) != NULL;
            if (ok) {
                c->health = health;
            }
        } else if (strcmp(kind, "ip") == 0) {
            int logic;
            char addr[64];
            struct chip *c;
            ok = sscanf(line, "ip %d %63s", &logic, addr) == 2 && (c = by_logic(logic)) != NULL &&
                 parse_ip(addr, c->ip, c->mask) == 0;
            if (ok) {
                c->has_ip = 1;
            }
        } else if (strcmp(kind, "topo") == 0) {
            int a, b;
            char code[16];
            ok = sscanf(line, "topo %d %d %15s", &a, &b, code) == 3 && a >= 0 && b >= 0 && a < MAX_CHIPS &&
                 b < MAX_CHIPS && topo_code(code) >= 0;
            if (ok) {
                topo[a][b] = topo[b][a] = topo_code(code);
            }
        } else if (strcmp(kind, "topo-default") == 0) {
            char code[16];
            ok = sscanf(line, "topo-default %15s", code) == 1 && topo_code(code) >= 0;
            if (ok) {
                topo_default = topo_code(code);
            }
        } else if (strcmp(kind, "vnpu-mode") == 0) {
            char mode[16];
            ok = sscanf(line, "vnpu-mode %15s", mode) == 1;
            docker_mode = ok && strcmp(mode, "docker") == 0;
        } else if (strcmp(kind, "vdev") == 0 && nvdevs < MAX_VDEVS) {
            struct vdev *v = &vdevs[nvdevs];
            ok = sscanf(line, "vdev %d %u %31s", &v->logic, &v->id, v->template_name) == 3;
            if (ok) {
                nvdevs++;
            }
        } else if (strcmp(kind, "fail") == 0 && nfails < MAX_FAILS) {
            struct fail *x = &fails[nfails];
            ok = sscanf(line, "fail %63s %d", x->fn, &x->code) == 2;
            if (ok) {
                nfails++;
            }
        }
        if (!ok) {
            fclose(f);
            return no;
        }
    }
    fclose(f);
    load_state();
    return 0;
}

int dcmi_init(void) {
    initialized = 0;
    if (load() != 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    int rc = failing(__func__);
    if (rc != 0) {
        return rc;
    }
    initialized = 1;
    return DCMI_OK;
}

int dcmi_get_card_list(int *card_num, int *card_list, int list_len) {
    FAIL_IF_ASKED();
    int n = 0;
    for (int i = 0; i < nchips; i++) {
        int seen = 0;
        for (int j = 0; j < n; j++) {
            seen |= card_list[j] == chips[i].card;
        }
        if (!seen) {
            if (n >= list_len) {
                return DCMI_ERR_INVALID_PARAMETER;
            }
            card_list[n++] = chips[i].card;
        }
    }
    *card_num = n;
    return DCMI_OK;
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
    FAIL_IF_ASKED();
    int n = 0;
    for (int i = 0; i < nchips; i++) {
        n += chips[i].card == card_id;
    }
    if (n == 0) {
        return DCMI_ERR_DEVICE_NOT_EXIST;
    }
    *device_num = n;
    return DCMI_OK;
}

#define CHIP_OR_FAIL(c, card, device)               \
    struct chip *c = by_card(card, device);         \
    if (c == NULL) {                                \
        return DCMI_ERR_DEVICE_NOT_EXIST;           \
    }

int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    *device_logic_id = c->logic;
    return DCMI_OK;
}

int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid) {
    FAIL_IF_ASKED();
    struct chip *c = by_logic((int)logicid);
    if (c == NULL) {
        return DCMI_ERR_DEVICE_NOT_EXIST;
    }
    *phyid = c->phy;
    return DCMI_OK;
}

int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *chip_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    memset(chip_info, 0, sizeof(*chip_info));
    snprintf((char *)chip_info->chip_type, MAX_CHIP_NAME_LEN, "Ascend");
    snprintf((char *)chip_info->chip_name, MAX_CHIP_NAME_LEN, "%s", c->name);
    snprintf((char *)chip_info->chip_ver, MAX_CHIP_NAME_LEN, "V1");
    chip_info->aicore_cnt = c->aicore;
    return DCMI_OK;
}

int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (c->hbm_mb == 0) {
        return DCMI_ERR_NOT_SUPPORT; /* 310P: DDR, no HBM */
    }
    memset(hbm_info, 0, sizeof(*hbm_info));
    hbm_info->memory_size = c->hbm_mb;
    hbm_info->freq = 1600;
    hbm_info->memory_usage = c->hbm_mb / 20;
    hbm_info->temp = 40;
    return DCMI_OK;
}

int dcmi_get_device_memory_info_v3(int card_id, int device_id, struct dcmi_get_memory_info_stru *memory_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    memset(memory_info, 0, sizeof(*memory_info));
    memory_info->memory_size = c->ddr_mb;
    memory_info->memory_available = c->ddr_mb;
    memory_info->hugepagesize = 2048;
    return DCMI_OK;
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    memset(pcie_info, 0, sizeof(*pcie_info));
    pcie_info->venderid = 0x19e5;
    pcie_info->subvenderid = 0x0200;
    pcie_info->deviceid = c->pci_device_id;
    pcie_info->domain = c->domain;
    pcie_info->bdf_busid = c->bus;
    pcie_info->bdf_deviceid = c->dev;
    pcie_info->bdf_funcid = c->fn;
    return DCMI_OK;
}

int dcmi_get_device_health(int card_id, int device_id, unsigned int *health) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    *health = c->health;
    return DCMI_OK;
}

int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count, unsigned int *error_code_list,
                                 unsigned int list_len) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    int n = 0;
    for (int i = 0; i < c->ncodes && (unsigned int)i < list_len; i++) {
        error_code_list[n++] = c->codes[i];
    }
    *error_count = n;
    return DCMI_OK;
}

int dcmi_get_topo_info_by_device_id(int card_id1, int device_id1, int card_id2, int device_id2, int *topo_type) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(a, card_id1, device_id1);
    CHIP_OR_FAIL(b, card_id2, device_id2);
    if (a == b) {
        *topo_type = DCMI_TOPO_TYPE_SELF;
    } else if (topo[a->logic][b->logic] >= 0) {
        *topo_type = topo[a->logic][b->logic];
    } else {
        *topo_type = topo_default;
    }
    return DCMI_OK;
}

int dcmi_get_device_ip(int card_id, int device_id, enum dcmi_port_type input_type, int port_id,
                       struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (input_type != DCMI_ROCE_PORT || port_id != 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    if (!c->has_ip) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    memset(ip, 0, sizeof(*ip));
    memset(mask, 0, sizeof(*mask));
    memcpy(ip->u_addr.ip4, c->ip, 4);
    memcpy(mask->u_addr.ip4, c->mask, 4);
    ip->ip_type = mask->ip_type = DCMI_IPADDR_TYPE_V4;
    return DCMI_OK;
}

int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    if (main_cmd != DCMI_MAIN_CMD_VDEV_MNG) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    if (sub_cmd == VMNG_SUB_CMD_GET_TOTAL_RESOURCE) {
        if (*size < sizeof(struct dcmi_soc_total_resource)) {
            return DCMI_ERR_INVALID_PARAMETER;
        }
        struct dcmi_soc_total_resource *r = buf;
        memset(r, 0, sizeof(*r));
        for (int i = 0; i < nvdevs && r->vdev_num < DCMI_SOC_SPLIT_MAX; i++) {
            if (vdevs[i].logic == c->logic) {
                r->vdev_id[r->vdev_num++] = vdevs[i].id;
            }
        }
        r->computing.aic = (float)c->aicore;
        r->computing.memory_size = c->hbm_mb ? c->hbm_mb : c->ddr_mb;
        *size = sizeof(*r);
        return DCMI_OK;
    }
    if (sub_cmd == VMNG_SUB_CMD_GET_VDEV_RESOURCE) {
        if (*size < sizeof(struct dcmi_vdev_query_stru)) {
            return DCMI_ERR_INVALID_PARAMETER;
        }
        struct dcmi_vdev_query_stru *q = buf;
        for (int i = 0; i < nvdevs; i++) {
            if (vdevs[i].logic == c->logic && vdevs[i].id == q->vdev_id) {
                memset(&q->query_info, 0, sizeof(q->query_info));
                snprintf(q->query_info.name, DCMI_VDEV_RES_NAME_LEN, "%s", vdevs[i].template_name);
                *size = sizeof(*q);
                return DCMI_OK;
            }
        }
        return DCMI_ERR_DEVICE_NOT_EXIST;
    }
    return DCMI_ERR_NOT_SUPPORT;
}

int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    load_state();
    if (!docker_mode) {
        return DCMI_ERR_OPER_NOT_PERMITTED;
    }
    /* vNPU ids of a chip: [phy*16+100, phy*16+115] (npu-smi create-vnpu -v) */
    unsigned int first = c->phy * 16 + 100;
    if (vdev->vdev_id < first || vdev->vdev_id >= first + 16 || vdev->template_name[0] == '\0' ||
        nvdevs >= MAX_VDEVS) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    for (int i = 0; i < nvdevs; i++) {
        if (vdevs[i].id == vdev->vdev_id) {
            return DCMI_ERR_RESOURCE_OCCUPIED;
        }
    }
    struct vdev *v = &vdevs[nvdevs++];
    v->logic = c->logic;
    v->id = vdev->vdev_id;
    snprintf(v->template_name, TEMPLATE_NAME_LEN, "%s", vdev->template_name);
    memset(out, 0, sizeof(*out));
    out->vdev_id = v->id;
    out->pcie_bus = c->bus;
    out->vfg_id = vdev->vfg_id;
    save_state();
    return DCMI_OK;
}

int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    load_state();
    for (int i = 0; i < nvdevs; i++) {
        if (vdevs[i].logic == c->logic && vdevs[i].id == vdevid) {
            vdevs[i] = vdevs[--nvdevs];
            save_state();
            return DCMI_OK;
        }
    }
    return DCMI_ERR_DEVICE_NOT_EXIST;
}

/* ------------------------------------------------------------------------
 * Telemetry: utilization, temperature and power, read by the node agent's
 * chip metrics (pkg/vendors/ascend/telemetry.go). Their values come from a
 * second fixture, the file named in ACCEL_DRA_DCMI_TELEMETRY (format in
 * README.md), re-read at every call so a test can change a chip's load
 * between two reads. A chip it does not list is idle: 0% AI core, 40 °C,
 * 70 W. Memory in use is dcmi_get_device_hbm_info's above.
 * ------------------------------------------------------------------------ */

struct telemetry {
    unsigned int util;  /* AI core %, 0..100 */
    int temp;           /* °C */
    int power;          /* 0.1 W, as dcmi_get_device_power_info reports */
    char fail_fn[64];   /* a call that fails on this chip only */
    int fail_code;
};

/* read_telemetry fills t for chip c from the telemetry fixture; it returns
 * non-zero when a line cannot be read, so a broken fixture shows. */
static int read_telemetry(const struct chip *c, struct telemetry *t) {
    memset(t, 0, sizeof(*t));
    t->temp = 40;
    t->power = 700;
    const char *path = getenv("ACCEL_DRA_DCMI_TELEMETRY");
    if (path == NULL || *path == '\0') {
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char kind[16] = "";
        if (sscanf(line, "%15s", kind) != 1) {
            continue;
        }
        int logic, code;
        unsigned int util;
        int temp, power;
        char fn[64];
        if (strcmp(kind, "load") == 0 && sscanf(line, "load %d %u %d %d", &logic, &util, &temp, &power) == 4) {
            if (logic == c->logic) {
                t->util = util, t->temp = temp, t->power = power;
            }
        } else if (strcmp(kind, "fail") == 0 && sscanf(line, "fail %d %63s %d", &logic, fn, &code) == 3) {
            if (logic == c->logic) {
                snprintf(t->fail_fn, sizeof(t->fail_fn), "%s", fn);
                t->fail_code = code;
            }
        } else {
            rc = DCMI_ERR_INVALID_PARAMETER;
        }
    }
    fclose(f);
    return rc;
}

#define TELEMETRY_OR_FAIL(t, c)                                       \
    struct telemetry t;                                               \
    do {                                                              \
        int rc_ = read_telemetry(c, &t);                              \
        if (rc_ != 0) {                                               \
            return rc_;                                               \
        }                                                             \
        if (t.fail_code != 0 && strcmp(t.fail_fn, __func__) == 0) {   \
            return t.fail_code;                                       \
        }                                                             \
    } while (0)

int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type, unsigned int *utilization_rate) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    if (input_type != DCMI_UTILIZATION_AICORE) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    *utilization_rate = t.util;
    return DCMI_OK;
}

int dcmi_get_device_temperature(int card_id, int device_id, int *temperature) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    *temperature = t.temp;
    return DCMI_OK;
}

int dcmi_get_device_power_info(int card_id, int device_id, int *power) {
    FAIL_IF_ASKED();
    CHIP_OR_FAIL(c, card_id, device_id);
    TELEMETRY_OR_FAIL(t, c);
    *power = t.power;
    return DCMI_OK;
}

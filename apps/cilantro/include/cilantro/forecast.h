/* cilantro/forecast.h: one-step-ahead load forecaster with a 90% upper bound.
 *
 * Keeps the last `window` observations. ARIMA mode fits ARMA(1,1) with a constant to
 * the first differences of the window (ARIMA(1,1,1)), or to the levels when
 * difference is 0 (ARMA(1,1)), by conditional least squares over a grid of (phi,
 * theta); it falls back to mean +- fallback_k * sd when the window is too short or
 * the fit is not finite. MEAN mode always uses the fallback. ORACLE mode returns the
 * value told by cil_forecaster_tell_next. Method: docs/cilantro.md. Not thread-safe.
 */
#ifndef CILANTRO_FORECAST_H
#define CILANTRO_FORECAST_H

#include <stddef.h>

typedef enum {
    CIL_FC_ARIMA = 0,
    CIL_FC_MEAN = 1,
    CIL_FC_ORACLE = 2,
} cil_fc_mode;

typedef struct {
    cil_fc_mode mode;
    size_t window;     /* observations kept, 2..100000 */
    size_t min_fit;    /* observations needed to fit, >= 8 and <= window */
    int difference;    /* 1: ARIMA(1,1,1) (default), 0: ARMA(1,1) on levels */
    double z;          /* upper = forecast + z * sd of the one-step residuals;
                        * default 1.2816, the one-sided 90% normal quantile */
    double fallback_k; /* fallback: mean +- fallback_k * sd, default 1.8 */
} cil_forecast_params;

/* One forecast. lower <= value <= upper. method says which produced it. For the
 * ARIMA fit, phi/theta/c are the fitted coefficients (0 otherwise). */
typedef struct {
    double value;
    double lower;
    double upper;
    cil_fc_mode method;
    double phi, theta, c;
} cil_forecast;

typedef struct cil_forecaster cil_forecaster;

/* Fills *p with the defaults: ARIMA, window 64, min_fit 10, difference 1, z 1.2816,
 * fallback_k 1.8. */
void cil_forecast_params_default(cil_forecast_params *p);

/* Returns a new forecaster, or NULL when params is NULL or invalid (see the field
 * comments; z and fallback_k must be finite and >= 0) or memory runs out. Free with
 * cil_forecaster_free. */
cil_forecaster *cil_forecaster_create(const cil_forecast_params *params);

/* Frees f; NULL is a no-op. */
void cil_forecaster_free(cil_forecaster *f);

/* Appends an observed load (finite) to the window, dropping the oldest when full,
 * and forgets any value told by cil_forecaster_tell_next. 0, or -1 on NULL/non-finite. */
int cil_forecaster_observe(cil_forecaster *f, double y);

/* ORACLE mode: tells the true next value; predictions return it (lower = upper =
 * value) until the next observe. Without a told value an oracle forecaster predicts
 * as ARIMA mode. 0, or -1 on NULL, non-finite y or another mode. */
int cil_forecaster_tell_next(cil_forecaster *f, double y);

/* Forecasts the next observation into *out. 0, or -1 on NULL or when there is
 * nothing to go on (no observation and no told value). */
int cil_forecaster_predict(const cil_forecaster *f, cil_forecast *out);

/* Number of observations in the window now. */
size_t cil_forecaster_size(const cil_forecaster *f);

#endif
